"""systemd readiness and watchdog notifications (`sd_notify(3)`), standard library only.

A service started with `Type=notify` gets `NOTIFY_SOCKET` (a filesystem path, or `@name` for
an abstract socket) and, with `WatchdogSec=`, `WATCHDOG_USEC` (plus `WATCHDOG_PID`). Each
notification is one AF_UNIX datagram of newline-separated `KEY=VALUE` lines.

Everything here is a no-op when `NOTIFY_SOCKET` is unset (foreground runs, launchd, Docker)
and never raises: a lost notification must not take the gateway down. Sends are non-blocking
single syscalls, safe to call from the event loop.

Typical use in the runner:

    notifier = SdNotifier.from_env()
    ...adapters connected...      notifier.ready()
    task = asyncio.create_task(notifier.run_watchdog(loop_watchdog.healthy))
    ...on SIGTERM, before draining...   notifier.stopping()
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable, Mapping

__all__ = ["SdNotifier"]


def _address(raw: str) -> str | None:
    if raw.startswith("@") and len(raw) > 1:
        return "\0" + raw[1:]
    if raw.startswith("/"):
        return raw
    return None  # vsock:… and relative paths are not supported


class SdNotifier:
    """Sends notifications to the service manager; inert when `address` is None."""

    def __init__(
        self,
        address: str | None,
        *,
        watchdog_usec: int | None = None,
    ) -> None:
        self._address = _address(address) if address else None
        self._watchdog_usec = watchdog_usec if watchdog_usec and watchdog_usec > 0 else None

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, unset_environment: bool = False
    ) -> SdNotifier:
        """Build from `NOTIFY_SOCKET` / `WATCHDOG_USEC` / `WATCHDOG_PID`.

        The watchdog is ignored when `WATCHDOG_PID` names another process. With
        `unset_environment=True` (only with the real `os.environ`) the three variables are
        removed so child processes do not inherit them. Never raises.
        """
        env = os.environ if environ is None else environ
        usec: int | None = None
        try:
            usec = int(env.get("WATCHDOG_USEC", "") or 0) or None
            pid = int(env.get("WATCHDOG_PID", "") or 0)
            if pid and pid != os.getpid():
                usec = None
        except ValueError:
            usec = None
        notifier = cls(env.get("NOTIFY_SOCKET") or None, watchdog_usec=usec)
        if unset_environment and environ is None:
            for key in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"):
                os.environ.pop(key, None)
        return notifier

    @property
    def enabled(self) -> bool:
        """True when a notification socket is configured."""
        return self._address is not None

    def notify(self, *fields: str) -> bool:
        """Send `fields` (e.g. `"READY=1"`, `"STATUS=…"`) as one datagram.

        Returns True when the datagram was handed to the socket, False when disabled or when
        sending failed (socket gone, queue full). Must not raise.
        """
        if self._address is None or not fields:
            return False
        payload = "\n".join(f.replace("\n", " ") for f in fields).encode("utf-8", "replace")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
                s.setblocking(False)
                s.connect(self._address)
                s.send(payload)
        except (OSError, ValueError):
            return False
        return True

    def ready(self, status: str | None = None) -> bool:
        """`READY=1` (start-up finished), with an optional status line. Must not raise."""
        extra = (f"STATUS={status}",) if status else ()
        return self.notify("READY=1", *extra)

    def stopping(self, status: str | None = None) -> bool:
        """`STOPPING=1` (draining has begun). Must not raise."""
        extra = (f"STATUS={status}",) if status else ()
        return self.notify("STOPPING=1", *extra)

    def reloading(self) -> bool:
        """`RELOADING=1`. Must not raise."""
        return self.notify("RELOADING=1")

    def status(self, text: str) -> bool:
        """`STATUS=<text>`, shown by `systemctl status`. Must not raise."""
        return self.notify(f"STATUS={text}")

    def watchdog(self) -> bool:
        """`WATCHDOG=1` keep-alive ping. Must not raise."""
        return self.notify("WATCHDOG=1")

    def extend_timeout(self, seconds: float) -> bool:
        """`EXTEND_TIMEOUT_USEC`: ask for `seconds` more to finish starting or stopping."""
        return self.notify(f"EXTEND_TIMEOUT_USEC={max(0, int(seconds * 1_000_000))}")

    def watchdog_interval(self) -> float | None:
        """Seconds between pings (half of `WATCHDOG_USEC`), or None when no watchdog is
        requested or notifications are disabled."""
        if self._address is None or self._watchdog_usec is None:
            return None
        return self._watchdog_usec / 2_000_000

    async def run_watchdog(
        self, healthy: Callable[[], bool], *, interval: float | None = None
    ) -> None:
        """Ping `WATCHDOG=1` every `interval` seconds (default `watchdog_interval()`), but
        only while `healthy()` is true, so a stalled event loop or a wedged gateway lets the
        manager's watchdog fire. Returns at once when there is no watchdog; runs until
        cancelled otherwise. An exception from `healthy()` counts as unhealthy."""
        period = interval if interval is not None else self.watchdog_interval()
        if period is None or period <= 0 or self._address is None:
            return
        while True:
            try:
                ok = bool(healthy())
            except Exception:
                ok = False
            if ok:
                self.watchdog()
            await asyncio.sleep(period)
