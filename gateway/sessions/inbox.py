"""`DurableInbox`: a session's queued events survive a restart.

The mailbox of a session worker lives in memory, while the event was already recorded as seen
(dedup) and the platform's offset moved on: a restart or a crash would lose every message
still waiting behind a running turn. So an event is *held* in state.db when it is accepted for
a session, and released in the same transaction that stores its user message (or when it is
dropped on purpose: /stop, a full mailbox). Start-up recovery hands held events back.

Every hold is a *claim* by this process's boot id, written in the same statement: start-up
recovery claims (`claim_held`) only events no session of its own boot has taken, and the live
path does not take an event recovery of its boot has taken, so one event is handed to one
session once (the restart race, docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable
from typing import Literal

import structlog

from gateway.events import MessageEvent
from storage import scrub
from storage.ports import HeldEvents
from storage.types import HeldEvent

__all__ = ["DurableInbox", "EventNotHeldError", "HoldOutcome", "event_keys", "payload_of"]

log = structlog.get_logger("gateway.sessions")

HoldOutcome = Literal["held", "taken", "volatile"]


class EventNotHeldError(Exception):
    """A live event was recorded (dedup) but could not be held: it must not be acknowledged,
    so the platform delivers it again; its dedup record is then reclaimed as new."""


def event_keys(events: Iterable[MessageEvent]) -> list[tuple[str, str]]:
    return [(e.platform, e.event_id) for e in events]


class DurableInbox:
    """Holds and releases events through the store. Storage failures are logged, never
    raised: a hold that failed is "volatile" (the caller refuses the event), a release that
    failed leaves the event held for the next start."""

    def __init__(self, store: HeldEvents, *, boot_id: str | None = None) -> None:
        """`boot_id` names this process's lifetime in the claims it writes (a fresh random
        id by default; one per `GatewayRunner`)."""
        self._store = store
        self.boot_id = boot_id or uuid.uuid4().hex
        self._tasks: set[asyncio.Task[None]] = set()
        self._recovered: set[tuple[str, str]] = set()  # what start-up recovery claimed

    async def take(self, key: str, event: MessageEvent) -> HoldOutcome:
        """Hold and claim `event` for session `key`: "held" (durable now), "taken" (a
        session of this boot already has it: do not queue it again) or "volatile" (storage
        failed: nothing is stored for it; `SessionManager.dispatch` raises `EventNotHeldError`)."""
        try:
            took = await self._store.inbound_hold(event.platform, event.event_id, key,
                                                  payload_of(event), claimed_by=self.boot_id)
        except Exception as exc:  # noqa: BLE001 - see class docstring
            log.warning("inbound_hold_failed", session_key=key, error=type(exc).__name__)
            return "volatile"
        return "held" if took else "taken"

    async def hold(self, key: str, event: MessageEvent) -> bool:
        """True when the event is now held durably (see `take`)."""
        return await self.take(key, event) == "held"

    async def release(self, events: Iterable[MessageEvent]) -> None:
        try:
            await self._store.inbound_release(event_keys(events))
        except Exception as exc:  # noqa: BLE001 - see class docstring
            log.warning("inbound_release_failed", error=type(exc).__name__)

    def release_soon(self, events: Iterable[MessageEvent]) -> None:
        """`release` from synchronous code (a task; the writer keeps submission order)."""
        batch = list(events)
        if not batch:
            return
        task = asyncio.get_running_loop().create_task(self.release(batch),
                                                      name="inbox-release")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def held(self) -> list[tuple[str, MessageEvent, float]]:
        """Held events in order as (session key, event, recorded at), whoever claimed them
        (a read; recovery uses `claim_held`). A payload that no longer parses is released."""
        return await self._parse(await self._store.inbound_held())

    async def claim_held(self) -> list[tuple[str, MessageEvent, float]]:
        """Claim for this boot, in one transaction, the held events no session of this boot
        has taken (those an earlier process was holding), in order, as `held()` returns
        them. Events the live path of this boot holds are never among them."""
        rows = await self._store.inbound_claim_held(self.boot_id)
        self._recovered.update((h.platform, h.event_id) for h in rows)
        return await self._parse(rows)

    def recovered(self, platform: str, event_id: str) -> bool:
        """Whether start-up recovery of this boot claimed this event (`claim_held`): its
        claim then reads like one of this boot's live path, and only this tells them apart."""
        return (platform, event_id) in self._recovered

    async def _parse(self, rows: list[HeldEvent]) -> list[tuple[str, MessageEvent, float]]:
        out: list[tuple[str, MessageEvent, float]] = []
        bad: list[tuple[str, str]] = []
        for h in rows:
            try:
                out.append((h.session_key, MessageEvent.model_validate_json(h.payload),
                            h.recorded_at))
            except ValueError:
                bad.append((h.platform, h.event_id))
        if bad:
            log.warning("held_events_unreadable", count=len(bad))
            await self._store.inbound_release(bad)
        return out

    async def close(self) -> None:
        """Wait for pending releases (before the store closes)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def payload_of(event: MessageEvent) -> str:
    """The event as JSON; text that cannot be encoded (lone surrogates from a broken client)
    is held with those characters replaced, as storage stores it."""
    try:
        return event.model_dump_json()
    except ValueError:
        return event.model_copy(update={"text": scrub(event.text)}).model_dump_json()
