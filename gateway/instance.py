"""One gateway per profile, one poller per bot token per machine.

Both locks are `flock(2)` locks on files that are never deleted: the kernel drops them when
the holder exits, however it exits, so a stale pid file can never block a start. The
descriptors are not inherited by child processes.

- Profile lock: `<home>/run/gateway.lock`, plus `<home>/run/gateway.pid` for people and tools.
- Token lock: `<locks_dir>/<platform>-<sha256(token)[:32]>.lock` under the machine-wide lock
  directory (`~/.hermes/locks`, or `$HERMES_LOCK_DIR`); the token itself is never written.

Everything here is blocking (short syscalls, and a bounded sleep loop in `acquire(replace=True)`
and `stop_running`): call it before the event loop starts or through `asyncio.to_thread`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import signal
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from gateway.paths import ensure_private_dir, locks_dir, paths

__all__ = [
    "AlreadyRunning",
    "InstanceLock",
    "TokenInUse",
    "TokenLock",
    "acquire",
    "acquire_token_lock",
    "running_pid",
    "stop_running",
    "token_lock_path",
]

_POLL_S = 0.05
_PLATFORM_RE = re.compile(r"^[a-z0-9_-]{1,32}$")


class AlreadyRunning(RuntimeError):
    """Another gateway holds this profile's lock. `pid` is 0 when it could not be read."""

    def __init__(self, pid: int, home: Path, detail: str | None = None) -> None:
        self.pid = pid
        self.home = home
        who = f"pid {pid}" if pid else "pid unknown"
        msg = detail or (
            f"a gateway is already running for the profile at {home} ({who}); "
            "stop it with `hermes gateway stop` or take over with `--replace`"
        )
        super().__init__(msg)


class TokenInUse(RuntimeError):
    """Another gateway on this machine already polls with this bot token."""

    def __init__(self, platform: str, pid: int, owner_home: str) -> None:
        self.platform = platform
        self.pid = pid
        self.owner_home = owner_home
        super().__init__(
            f"this {platform} bot token is already used by the gateway of the profile at "
            f"{owner_home or 'an unknown profile'} (pid {pid or 'unknown'}); "
            "one poller per bot token per machine"
        )


def _try_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _unlock(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    with contextlib.suppress(OSError):
        os.close(fd)


def _write_fd(fd: int, text: str) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, text.encode(), 0)


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text(encoding="utf-8").strip() or 0)
    except (OSError, ValueError):
        return 0


def _holder_pid(lock_file: Path, pid_file: Path) -> int:
    """Pid of the lock holder; retried briefly because a fresh holder writes it just after
    locking. 0 when unknown."""
    for _ in range(10):
        pid = _read_int(lock_file) or _read_int(pid_file)
        if pid:
            return pid
        time.sleep(_POLL_S)
    return 0


class _HeldLock:
    """A held kernel file lock. `release()` is idempotent; also a context manager."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def _before_unlock(self) -> None:
        """Hook: clean up what the holder advertised while the lock is still held."""

    def release(self) -> None:
        if self._fd is None:
            return
        self._before_unlock()
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
        _unlock(self._fd)
        self._fd = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class InstanceLock(_HeldLock):
    """The held profile lock (one gateway per profile); removes the pid file on release."""

    def __init__(self, home: Path, fd: int) -> None:
        super().__init__(fd)
        self.home = home
        self.pid = os.getpid()

    def _before_unlock(self) -> None:
        p = paths(self.home)
        if _read_int(p.pid_file) == self.pid:
            p.pid_file.unlink(missing_ok=True)


def acquire(
    home: Path | None = None, *, replace: bool = False, timeout: float = 45.0
) -> InstanceLock:
    """Take the single-instance lock of the profile at `home` (default: the active one).

    With `replace=True`, a running holder gets SIGTERM (so it drains) and we wait up to
    `timeout` seconds for it to exit, then take over.
    Raises `AlreadyRunning(pid)` when the lock is held (and, with `replace`, the holder did
    not exit in time or is this very process); OSError when the run directory is unusable.
    """
    p = paths(home)
    ensure_private_dir(p.run_dir)
    fd = _try_lock(p.lock_file)
    if fd is None:
        pid = _holder_pid(p.lock_file, p.pid_file)
        if not replace:
            raise AlreadyRunning(pid, p.root)
        if pid == os.getpid():
            raise AlreadyRunning(pid, p.root, "this process already holds the profile lock")
        if pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while (fd := _try_lock(p.lock_file)) is None:
            if time.monotonic() >= deadline:
                raise AlreadyRunning(
                    pid, p.root, f"the running gateway (pid {pid}) did not exit within {timeout:g}s"
                )
            time.sleep(_POLL_S)
    try:
        _write_fd(fd, f"{os.getpid()}\n")
        tmp = p.pid_file.with_name(f".{p.pid_file.name}.{os.getpid()}")
        tmp.write_text(f"{os.getpid()}\n", encoding="utf-8")
        os.replace(tmp, p.pid_file)
    except BaseException:
        _unlock(fd)
        raise
    return InstanceLock(p.root, fd)


def running_pid(home: Path | None = None) -> int | None:
    """Pid of the gateway holding the profile lock, None when none runs (0: running, pid
    unknown). Must not raise for a missing or unreadable profile (returns None)."""
    p = paths(home)
    if not p.lock_file.exists():
        return None
    try:
        fd = _try_lock(p.lock_file)
    except OSError:
        return None
    if fd is not None:
        _unlock(fd)
        return None
    return _holder_pid(p.lock_file, p.pid_file)


def stop_running(home: Path | None = None, *, timeout: float = 45.0) -> bool:
    """SIGTERM the profile's running gateway and wait up to `timeout` s for its lock to free.

    Returns True when no gateway runs any more (also when none ran), False otherwise (also
    when the holder is this process or its pid is unknown). Must not raise for a missing
    profile.
    """
    pid = running_pid(home)
    if pid is None:
        return True
    if not pid or pid == os.getpid():
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while running_pid(home) is not None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)
    return True


class TokenLock(_HeldLock):
    """A held bot-token lock (one poller per token on the machine)."""

    def __init__(self, platform: str, path: Path, fd: int) -> None:
        super().__init__(fd)
        self.platform = platform
        self.path = path


def token_lock_path(platform: str, token: str) -> Path:
    """Lock file for `token` on `platform`; the name holds a hash, never the token."""
    if not _PLATFORM_RE.match(platform):
        raise ValueError(f"invalid platform name for a token lock: {platform!r}")
    digest = hashlib.sha256(token.encode("utf-8")).hexdigest()[:32]
    return locks_dir() / f"{platform}-{digest}.lock"


def acquire_token_lock(platform: str, token: str, *, home: Path | None = None) -> TokenLock:
    """Claim `token` for this process machine-wide (one poller per bot token).

    `home` (default: the active profile) is recorded so a refused start can name the owner.
    Raises `TokenInUse` when another process holds it, ValueError for an empty token or bad
    platform name, OSError when the lock directory is unusable.
    """
    if not token:
        raise ValueError("empty bot token")
    path = token_lock_path(platform, token)
    ensure_private_dir(path.parent)
    fd = _try_lock(path)
    if fd is None:
        owner: dict[str, object] = {}
        for _ in range(10):
            with contextlib.suppress(OSError, ValueError):
                owner = json.loads(path.read_text(encoding="utf-8") or "{}")
            if owner:
                break
            time.sleep(_POLL_S)
        pid = owner.get("pid", 0)
        raise TokenInUse(platform, pid if isinstance(pid, int) else 0, str(owner.get("home", "")))
    try:
        info = {"pid": os.getpid(), "home": str(paths(home).root), "platform": platform}
        _write_fd(fd, json.dumps(info))
    except BaseException:
        _unlock(fd)
        raise
    return TokenLock(platform, path, fd)
