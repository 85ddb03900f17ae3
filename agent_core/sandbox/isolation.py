"""Which isolation the host allows a sandboxed script, found once by probing.

Layers, strongest available first:
- namespaces: `unshare` puts the script in new user, network and pid namespaces (no network
  interface but a down loopback; killing the sandbox's first process kills every process
  it started);
- a process limit: `RLIMIT_NPROC`, except for root, which the kernel exempts from it; root
  gets a `pids` cgroup per run when the cgroup tree is writable;
- resource limits (`RLIMIT_CPU`, `RLIMIT_AS`, `RLIMIT_FSIZE`, `RLIMIT_NOFILE`) always.
Files are not confined: the script runs as the gateway's user, in the caller's workspace.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["Isolation", "PidsCgroup", "probe_isolation"]

SandboxMode = Literal["auto", "namespaces", "rlimits"]
UNSHARE_ARGS = ("--user", "--net", "--pid", "--fork", "--kill-child")
_CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
_CGROUP_GROUP = "hermes-sandbox"


@dataclass(frozen=True, slots=True)
class Isolation:
    """What a sandboxed script gets on this host. `unshare` is the binary's path when
    namespaces are on; `cgroup_root` the pids cgroup folder runs are placed under."""

    namespaces: bool
    unshare: str | None = None
    cgroup_root: Path | None = None
    nproc_rlimit: bool = False
    reason: str = ""

    @property
    def name(self) -> str:
        return "namespaces" if self.namespaces else "rlimits"

    @property
    def process_limit(self) -> bool:
        return self.cgroup_root is not None or self.nproc_rlimit

    def prefix(self) -> list[str]:
        """The command that puts the script in its namespaces (empty without them)."""
        return [self.unshare, *UNSHARE_ARGS, "--"] if self.namespaces and self.unshare else []

    def describe(self) -> str:
        """One line for `/tools` and the log: what confines a script, and what does not."""
        procs = ("pids cgroup" if self.cgroup_root is not None
                 else "RLIMIT_NPROC" if self.nproc_rlimit else "no process-count limit")
        if self.namespaces:
            head = "namespaces (user, network, pid): no network except the tool channel"
        else:
            head = ("resource limits only: the script CAN reach the network"
                    + (f" ({self.reason})" if self.reason else ""))
        return f"{head}; CPU, wall time, memory, output and tool-call limits; {procs}"


async def _can_unshare(binary: str) -> tuple[bool, str]:
    try:
        proc = await asyncio.create_subprocess_exec(
            binary, *UNSHARE_ARGS, "--", "true", stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        _, err = await asyncio.wait_for(proc.communicate(), timeout=5)
    except (OSError, TimeoutError) as exc:
        return False, f"unshare failed: {type(exc).__name__}"
    if proc.returncode != 0:
        detail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["exit status"]
        return False, f"unshare refused: {detail[0][:120]}"
    return True, ""


def _cgroup_root() -> Path | None:
    """A writable pids cgroup folder for sandbox runs, or None."""
    for root in _CGROUP_ROOTS:
        if not (root / "cgroup.procs").exists():
            continue
        if root == Path("/sys/fs/cgroup") and "pids" not in _read(root / "cgroup.controllers"):
            continue
        base = root / _CGROUP_GROUP
        probe = base / f"probe-{uuid.uuid4().hex[:8]}"
        try:
            base.mkdir(exist_ok=True)
            if root == Path("/sys/fs/cgroup"):
                (base / "cgroup.subtree_control").write_text("+pids")
            probe.mkdir()
            ok = (probe / "pids.max").exists()
            probe.rmdir()
        except OSError:
            continue
        if ok:
            return base
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


async def probe_isolation(mode: SandboxMode = "auto") -> Isolation:
    """Find out what this host allows. Never raises; `mode: namespaces` without them gives
    an `Isolation` whose `reason` says why scripts will be refused."""
    root = os.geteuid() == 0
    cgroup = await asyncio.to_thread(_cgroup_root) if root else None
    if mode == "rlimits":
        return Isolation(False, cgroup_root=cgroup, reason="tools.code.sandbox: rlimits")
    binary = shutil.which("unshare")
    if binary is None:
        ok, why = False, "no unshare binary"
    else:
        ok, why = await _can_unshare(binary)
    # Outside a user namespace RLIMIT_NPROC would count every process of the gateway's user.
    return Isolation(ok, binary if ok else None, cgroup_root=cgroup,
                     nproc_rlimit=ok and not root, reason=why)


class PidsCgroup:
    """One run's pids cgroup: created with a limit, joined by the script's first process
    (through the path it is given), emptied and removed afterwards."""

    def __init__(self, base: Path, max_pids: int) -> None:
        self.path = base / f"run-{uuid.uuid4().hex[:12]}"
        self._max = max_pids

    def create(self) -> Path:
        """The `cgroup.procs` file to join. Raises OSError."""
        self.path.mkdir()
        (self.path / "pids.max").write_text(str(self._max))
        return self.path / "cgroup.procs"

    def hit_limit(self) -> bool:
        events = _read(self.path / "pids.events").split()
        return len(events) >= 2 and events[0] == "max" and events[1] != "0"

    def remove(self) -> None:
        """Kill what is left in it and remove it. Must not raise."""
        for _ in range(50):
            pids = _read(self.path / "cgroup.procs").split()
            for pid in pids:
                with contextlib.suppress(OSError, ValueError):
                    os.kill(int(pid), 9)
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)
