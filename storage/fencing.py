"""The session fence: writes a turn makes are checked against its replica's session lease.

With several gateway replicas on one database, a session is worked by the replica that holds
its session lease (`storage.replicas`). A replica that lost the lease (it stalled, or the
network cut it off from the database, and another replica took the session over with a
higher token) may still be running a turn. The turn's writes that matter, its stored
messages (`append_live`) and its reply in the outbox (`outbox_add`), are therefore *fenced*:
inside the write transaction the session lease row must still name this holder and token,
unexpired, or the write raises `FenceRejected("lease_lost")` and nothing is stored, so the
stale turn cannot store or send a reply; the new owner answers the event instead.

The fence travels with the turn as a context variable (`session_fence`): the replica
runtime sets it in the task that runs the turn, and the fenced operations read it when they
are called (not in the writer task). Without a fence (SQLite, one process, the CLI) nothing
is checked and nothing changes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from storage.errors import FenceRejected
from storage.sqlconn import Conn

__all__ = ["SessionFence", "check_session_fence", "current_fence", "fenced"]


@dataclass(frozen=True, slots=True)
class SessionFence:
    """The session lease a turn runs under: routing key, holder (replica id) and token."""

    session_key: str
    holder: str
    token: int


_FENCE: ContextVar[SessionFence | None] = ContextVar("hermes_session_fence", default=None)


def current_fence() -> SessionFence | None:
    """The fence of the running task (None: nothing to check)."""
    return _FENCE.get()


@contextlib.contextmanager
def fenced(fence: SessionFence | None) -> Iterator[None]:
    """Run the block (and the tasks it creates) under `fence`."""
    token = _FENCE.set(fence)
    try:
        yield
    finally:
        _FENCE.reset(token)


async def check_session_fence(conn: Conn, fence: SessionFence | None, now: float) -> None:
    """Inside the caller's write transaction: raise `FenceRejected("lease_lost")` unless
    `fence` is still the session's current lease. On PostgreSQL the lease row is locked for
    share, so a takeover (an update of that row) waits until this transaction ends."""
    if fence is None:
        return
    lock = " FOR SHARE" if conn.dialect == "postgres" else ""
    rows = await conn.execute_fetchall(
        "SELECT holder, token, expires_at FROM session_leases WHERE session_key = ?" + lock,
        (fence.session_key,))
    if (not rows or rows[0]["holder"] != fence.holder or int(rows[0]["token"]) != fence.token
            or float(rows[0]["expires_at"]) <= now):
        raise FenceRejected("lease_lost",
                            f"session lease token {fence.token} is no longer current")
