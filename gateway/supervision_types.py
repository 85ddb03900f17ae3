"""Data types of adapter supervision: states, settings, status snapshots."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gateway.ports import CursorStore
from hermes_common.backoff import Backoff

__all__ = [
    "AdapterState",
    "AdapterStatus",
    "InboundMediaLimits",
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
class InboundMediaLimits:
    """What every adapter's context says about inbound files besides the per-file cap
    (`gateway.media`: `max_message_mb`, `max_images_per_message`, `download_timeout_s`)."""

    max_message_bytes: int = 50 * 1024 * 1024
    max_images: int = 4
    download_timeout_s: float = 60.0


@dataclass(frozen=True, slots=True)
class SupervisorSettings:
    connect_timeout_s: float = 30.0
    #: Bound on `adapter.stop()` and on waiting for `start()` to return after a stop.
    stop_timeout_s: float = 5.0
    #: How often the supervisor checks connect deadlines and liveness.
    check_interval_s: float = 1.0
    #: A run connected at least this long resets the backoff attempt counter.
    healthy_after_s: float = 60.0
    #: Delay before restart attempt n: 1 s doubling to 5 min, up to a quarter off at random.
    backoff: Backoff = field(default_factory=lambda: Backoff(base_s=1.0, cap_s=300.0))


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
