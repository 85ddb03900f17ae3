"""Waking a session's owner: a PostgreSQL `LISTEN` on `HANDOVER_CHANNEL`.

The notifications are sent by the write transaction that puts an event in a session's line
(`storage.replicas`), so they arrive only once it committed. One dedicated connection per
replica listens; when it drops (a database restart, a network cut) it reconnects with
backoff and calls `on_key(None)`: notifications may have been missed meanwhile, so the
replica sweeps every line instead. A notification is only a wake-up: nothing is lost when one
never arrives (the replica's periodic sweep finds the line).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import asyncpg

from hermes_common.backoff import Backoff
from storage.postgres.db import connect
from storage.replicas import HANDOVER_CHANNEL

__all__ = ["HandoverListener"]

_PACING = Backoff(base_s=0.2, cap_s=5.0, jitter=0.5)
_CHECK_S = 1.0


class HandoverListener:
    """Listens for wake-ups addressed to `replica_id` and calls `on_key(session_key)` on the
    event loop (`on_key(None)`: after a reconnect, sweep everything). `on_key` must not raise
    or block. `close()` is idempotent."""

    def __init__(self, dsn: str, replica_id: str, on_key: Callable[[str | None], None], *,
                 on_error: Callable[[BaseException, int], None] | None = None) -> None:
        """`on_error(error, attempt)` hears each lost connection (the caller logs it)."""
        self._dsn = dsn
        self._me = replica_id
        self._on_key = on_key
        self._on_error = on_error
        self._task: asyncio.Task[None] | None = None
        self._closed = asyncio.Event()
        self.connected = asyncio.Event()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="replica-handover-listener")

    def _deliver(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        owner, _, key = str(payload).partition(" ")
        if owner == self._me and key:
            self._on_key(key)

    async def _run(self) -> None:
        attempt = 0
        first = True
        while not self._closed.is_set():
            conn: asyncpg.Connection | None = None
            try:
                conn = await connect(self._dsn)
                await conn.add_listener(HANDOVER_CHANNEL, self._deliver)
                attempt = 0
                self.connected.set()
                if not first:
                    self._on_key(None)
                first = False
                while not self._closed.is_set() and not conn.is_closed():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._closed.wait(), _CHECK_S)
                    if not self._closed.is_set() and not conn.is_closed():
                        await conn.execute("SELECT 1")  # a dead peer shows up here
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - reconnect; the sweep covers the gap
                self.connected.clear()
                attempt += 1
                if self._on_error is not None:
                    self._on_error(exc, attempt)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closed.wait(), _PACING.delay(attempt))
            finally:
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(conn.close(), 2)

    async def close(self) -> None:
        self._closed.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
