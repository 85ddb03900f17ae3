"""The gateway under test as a subprocess (`hermes gateway run`), its memory, and storage
pressure from outside: a second process holding a read transaction, a disk that fills up."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.fakes.gateway_process import HERMES

__all__ = ["DiskFiller", "GatewayProcess", "hold_read_transaction"]


@dataclass
class Incarnation:
    pid: int
    started: float
    rss_kb: list[tuple[float, int]] = field(default_factory=list)
    exit_code: int | None = None


def rss_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


class GatewayProcess:
    """Start, signal and restart the real gateway; samples its RSS every second."""

    def __init__(self, home: Path, run_dir: Path) -> None:
        self.home = home
        self.log = run_dir / "gateway.log"
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("HERMES_", "SLACK_", "TELEGRAM_", "DISCORD_"))}
        self.env.update({"HERMES_HOME": str(home), "HOME": str(run_dir),
                         "HERMES_LOCK_DIR": str(run_dir / "locks")})
        self.proc: asyncio.subprocess.Process | None = None
        self.incarnations: list[Incarnation] = []
        self._sampler: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.running and self.proc is not None else None

    async def start(self) -> None:
        assert not self.running
        with self.log.open("ab") as out:
            out.write(f"\n===== start at {time.time():.3f} =====\n".encode())
            out.flush()
            self.proc = await asyncio.create_subprocess_exec(
                str(HERMES), "gateway", "run", env=self.env, stdin=asyncio.subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT)
        inc = Incarnation(self.proc.pid, time.monotonic())
        self.incarnations.append(inc)
        self._sampler = asyncio.create_task(self._sample(self.proc, inc),
                                            name="chaos:rss-sampler")

    async def _sample(self, proc: asyncio.subprocess.Process, inc: Incarnation) -> None:
        while proc.returncode is None:
            kb = rss_kb(proc.pid)
            if kb is not None:
                inc.rss_kb.append((time.monotonic(), kb))
            await asyncio.sleep(1.0)

    def signal(self, sig: signal.Signals) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(sig)

    async def wait(self, timeout: float) -> int | None:
        """Wait for the process to exit; SIGKILL it after `timeout` (a stuck shutdown)."""
        if self.proc is None:
            return None
        try:
            code = await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            code = await self.proc.wait()
            with self.log.open("ab") as out:
                out.write(b"\n===== chaos: shutdown did not finish; killed =====\n")
        self.incarnations[-1].exit_code = code
        if self._sampler is not None:
            self._sampler.cancel()
            await asyncio.gather(self._sampler, return_exceptions=True)
        return code

    def peak_rss_mb(self) -> float:
        return max((kb for inc in self.incarnations for _, kb in inc.rss_kb), default=0) / 1024

    def rss_growth_problems(self, min_span_s: float = 120.0) -> list[str]:
        """Incarnations that ran at least `min_span_s` and whose RSS in their last quarter
        is well above their second quarter (after warm-up): growth without bound."""
        out = []
        for inc in self.incarnations:
            xs = inc.rss_kb
            if len(xs) < 8 or xs[-1][0] - xs[0][0] < min_span_s:
                continue
            q = len(xs) // 4
            early = sorted(kb for _, kb in xs[q:2 * q])[q // 2]
            late = sorted(kb for _, kb in xs[3 * q:])[len(xs[3 * q:]) // 2]
            if late > early * 1.5 + 30 * 1024:
                out.append(f"pid {inc.pid}: RSS {early // 1024} MB -> {late // 1024} MB")
        return out


_READER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], timeout=30)
conn.execute("BEGIN")
conn.execute("SELECT count(*) FROM messages").fetchone()
time.sleep(float(sys.argv[2]))
conn.rollback()
"""


async def hold_read_transaction(db: Path, seconds: float) -> None:
    """Another process opens state.db, starts a read transaction and keeps it for `seconds`
    (it pins the WAL: checkpoints cannot complete meanwhile)."""
    if not db.exists():
        return
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _READER, str(db), f"{seconds:.2f}",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    await proc.wait()


class DiskFiller:
    """The profile directory on a size-limited tmpfs, filled up on demand. Needs the right to
    mount (root with CAP_SYS_ADMIN); otherwise `reason` says why it is skipped."""

    def __init__(self, mount_point: Path, size_mb: int) -> None:
        self.mount_point = mount_point
        self.size_mb = size_mb
        self.mounted = False
        self.reason = ""
        self.filler = mount_point / ".chaos-filler"

    def mount(self) -> bool:
        self.mount_point.mkdir(parents=True, exist_ok=True)
        if sys.platform != "linux":
            self.reason = f"disk-full faults skipped: tmpfs mounts need Linux ({sys.platform})"
            return False
        if os.geteuid() != 0 or shutil.which("mount") is None:
            self.reason = "disk-full faults skipped: mounting a size-limited tmpfs needs root"
            return False
        res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m,mode=0700",
                              "tmpfs", str(self.mount_point)], capture_output=True, text=True,
                             check=False)
        if res.returncode != 0:
            self.reason = ("disk-full faults skipped: cannot mount a tmpfs here "
                           f"({res.stderr.strip() or res.returncode})")
            return False
        self.mounted = True
        return True

    def fill(self) -> int:
        """Take all the free space but a few KiB; returns the bytes taken."""
        free = os.statvfs(self.mount_point)
        left = free.f_bavail * free.f_frsize - 8 * 1024
        written = 0
        with contextlib.suppress(OSError), self.filler.open("ab") as f:
            block = b"\0" * (1024 * 1024)
            while written < left:
                n = min(len(block), left - written)
                f.write(block[:n])
                written += n
        return written

    def free(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.filler.unlink()

    def unmount(self) -> None:
        if self.mounted:
            self.free()
            res = subprocess.run(["umount", str(self.mount_point)], capture_output=True,
                                 check=False)
            if res.returncode != 0:
                subprocess.run(["umount", "-l", str(self.mount_point)], capture_output=True,
                               check=False)
            self.mounted = False
