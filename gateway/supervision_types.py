"""Data types of adapter supervision: states, backoff policy, settings, status snapshots."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gateway.ports import CursorStore

__all__ = [
    "AdapterState",
    "AdapterStatus",
    "BackoffPolicy",
    "MemoryCursorStore",
    "SupervisorSettings",
]


class AdapterState(StrEnum):
    STARTING = "starting"
    CONNECTED = "connected"
    STALLED = "stalled"
    BACKOFF = "backoff"
    FAILED_FATAL = "failed_fatal"
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """Delay before restart `attempt` (1-based): `min(cap, base * 2**(attempt-1))`, minus a
    random fraction of at most `jitter` of it. With `jitter < 0.5` delays strictly grow until
    the cap."""

    base_s: float = 1.0
    cap_s: float = 300.0
    jitter: float = 0.25

    def delay(self, attempt: int, rand: float) -> float:
        nominal = min(self.cap_s, self.base_s * 2 ** max(0, attempt - 1))
        return nominal * (1.0 - self.jitter * min(max(rand, 0.0), 1.0))


@dataclass(frozen=True, slots=True)
class SupervisorSettings:
    connect_timeout_s: float = 30.0
    #: Bound on `adapter.stop()` and on waiting for `start()` to return after a stop.
    stop_timeout_s: float = 5.0
    #: How often the supervisor checks connect deadlines and liveness.
    check_interval_s: float = 1.0
    #: A run connected at least this long resets the backoff attempt counter.
    healthy_after_s: float = 60.0
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)


@dataclass(frozen=True, slots=True)
class AdapterStatus:
    """A point-in-time view of one adapter. Times are wall-clock epoch seconds."""

    name: str
    state: AdapterState
    last_error: str | None
    restarts: int
    last_inbound_at: float | None
    last_outbound_at: float | None
    last_progress_at: float | None
    connected_since: float | None
    next_retry_at: float | None

    @property
    def connected(self) -> bool:
        return self.state is AdapterState.CONNECTED

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state.value,
            "last_error": self.last_error,
            "restarts": self.restarts,
            "last_inbound_at": self.last_inbound_at,
            "last_outbound_at": self.last_outbound_at,
            "last_progress_at": self.last_progress_at,
            "connected_since": self.connected_since,
            "next_retry_at": self.next_retry_at,
        }


class MemoryCursorStore(CursorStore):
    """A non-durable `CursorStore` (tests, and adapters that need no cursor). `values` holds
    what was stored and `writes` counts `set` calls, for tests to read."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.writes = 0

    async def get(self, name: str) -> str | None:
        return self.values.get(name)

    async def set(self, name: str, value: str) -> None:
        self.values[name] = value
        self.writes += 1
