"""`AgentBuilder`: an agent for one session's turn, with the ports the gateway gives it."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from agent_core.agent import Agent
from agent_core.ports import AgentPorts
from gateway.agents import AgentFactory
from gateway.delivery.service import DeliveryService, ReplyTarget
from storage.ports import SearchIndex
from storage.types import Session

__all__ = ["AgentBuilder"]

#: Sessions whose tool state (`ToolContext.extra`, e.g. the todo list) is kept in memory.
MAX_SESSION_EXTRAS = 2048


class _SearchPort:
    """`session_search` over the state store."""

    def __init__(self, index: SearchIndex) -> None:
        self._index = index

    async def search(self, query: str, *, limit: int = 5) -> list[dict[str, Any]]:
        hits = await self._index.search(query, limit=limit)
        return [h.to_dict() for h in hits]


class _SendPort:
    """`send_message`: an out-of-band notice to the chat of the turn."""

    def __init__(self, delivery: DeliveryService, target: ReplyTarget) -> None:
        self._delivery = delivery
        self._target = target

    async def send(self, text: str) -> None:
        await self._delivery.notify(self._target, text)


class AgentBuilder:
    """Builds the `Agent` of a turn: the session's stored system prompt, its tool state kept
    across turns (bounded, least recently used dropped first) and the gateway's ports."""

    def __init__(self, agents: AgentFactory, index: SearchIndex,
                 delivery: DeliveryService) -> None:
        self._agents = agents
        self._index = index
        self._delivery = delivery
        self._extras: OrderedDict[str, dict[str, Any]] = OrderedDict()

    @property
    def model(self) -> str:
        return self._agents.model

    async def system_prompt(self, *, platform_hint: str = "") -> str:
        return await self._agents.system_prompt(platform_hint=platform_hint)

    async def build(self, session: Session, target: ReplyTarget, *,
                    quiet: bool = False) -> Agent:
        """`quiet`: no `send_message` port (a turn whose output nobody sees)."""
        extra = self._extras.get(session.id)
        if extra is None:
            extra = self._extras[session.id] = {}
            while len(self._extras) > MAX_SESSION_EXTRAS:
                self._extras.popitem(last=False)
        else:
            self._extras.move_to_end(session.id)
        ports = AgentPorts(search=_SearchPort(self._index),
                           send_message=None if quiet else _SendPort(self._delivery, target))
        prompt = session.system_prompt or await self._agents.system_prompt()
        return self._agents.build(prompt, session_id=session.id, ports=ports, extra=extra)
