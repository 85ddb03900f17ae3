"""`SteerDesk`: busy mode `steer` hands a new message to the running agent."""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog

from agent_core.agent import Agent
from gateway.events import MessageEvent
from gateway.sessions.inbox import event_keys
from storage.ports import HeldEvents

__all__ = ["SteerDesk", "Steering"]

log = structlog.get_logger("gateway.turns")


@dataclass(slots=True)
class Steering:
    """The steer state of one running turn. The agent consumes steered texts in order
    (`agent.steered` counts them); `released` of those were stored with the turn's
    messages, which also let their durable holds go."""

    agent: Agent
    events: list[MessageEvent] = field(default_factory=list)
    released: int = 0

    @property
    def taken(self) -> list[MessageEvent]:
        """Steered events the agent has taken into the conversation so far."""
        return self.events[:self.agent.steered]


class SteerDesk:
    """Knows the running turn of each session key and steers it."""

    def __init__(self, held: HeldEvents) -> None:
        self._held = held
        self._running: dict[str, Steering] = {}

    def begin(self, key: str, agent: Agent) -> Steering:
        state = self._running[key] = Steering(agent)
        return state

    async def steer(self, key: str, event: MessageEvent) -> bool:
        """Inject `event`'s text into the running turn of `key`; False when there is none,
        the event carries attachments, or the agent refuses (it is then queued instead)."""
        state = self._running.get(key)
        if state is None or not event.text.strip() or event.attachments or event.skipped:
            return False
        if not state.agent.steer(event.text):
            return False
        state.events.append(event)
        return True

    async def end(self, key: str, state: Steering) -> tuple[list[MessageEvent], list[MessageEvent]]:
        """The turn of `state` ended: returns (steered events it used, steered events it
        never used, to run as the next turn). Holds of used events that were not stored with
        the turn's messages are let go here. Must not raise."""
        if self._running.get(key) is state:
            del self._running[key]
        used = state.taken
        unstored = used[state.released:]
        if unstored:  # taken in, but no messages were stored with them
            try:
                await self._held.inbound_release(event_keys(unstored))
            except Exception as exc:  # noqa: BLE001 - the hold is only released late
                log.warning("steer_release_failed", session_key=key, error=type(exc).__name__)
        return used, state.events[len(used):]
