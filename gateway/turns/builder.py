"""`AgentBuilder`: an agent for one session's turn, with the ports the gateway gives it."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from pathlib import Path
from typing import Any

from agent_core.agent import Agent
from agent_core.ports import AgentPorts
from gateway.agents import AgentFactory
from gateway.approvals import ApprovalDesk, TurnApprovals
from gateway.delivery.service import DeliveryService, ReplyTarget
from gateway.events import Principal
from gateway.principals import audience_of
from storage.ports import SearchIndex
from storage.types import Session, SessionScope

__all__ = ["AgentBuilder"]

#: Sessions whose tool state (`ToolContext.extra`, e.g. the todo list) is kept in memory.
MAX_SESSION_EXTRAS = 2048


class _SearchPort:
    """`session_search` over the state store, within the sessions the turn's user may see
    from the chat of the turn (`SessionScope`: filtered by the store, in SQL)."""

    def __init__(self, index: SearchIndex, scope: SessionScope) -> None:
        self._index = index
        self._scope = scope

    async def search(self, query: str, *, limit: int = 5) -> list[dict[str, Any]]:
        hits = await self._index.search(query, limit=limit, scope=self._scope)
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
                 delivery: DeliveryService, *, approvals: ApprovalDesk | None = None,
                 approval_timeout_s: float = 300.0) -> None:
        """`approvals`: where a dangerous tool call of a turn asks its user (None: such
        calls are refused)."""
        self._agents = agents
        self._index = index
        self._delivery = delivery
        self._approvals = approvals
        self._approval_timeout_s = approval_timeout_s
        self._extras: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._workspaces: set[Path] = set()

    @property
    def model(self) -> str:
        return self._agents.model

    async def system_prompt(self, *, platform_hint: str = "",
                            audience: Principal | None = None) -> str:
        return await self._agents.system_prompt(platform_hint=platform_hint, audience=audience)

    async def build(self, session: Session, target: ReplyTarget, *,
                    quiet: bool = False) -> Agent:
        """The agent of a turn answering `target.user_id` (the session's owner when the
        target names no user): its tools act for that user, its search sees what that user
        may see from the target's chat. `quiet`: no `send_message` port (a turn whose
        output nobody sees)."""
        extra = self._extras.get(session.id)
        if extra is None:
            extra = self._extras[session.id] = {}
            while len(self._extras) > MAX_SESSION_EXTRAS:
                self._extras.popitem(last=False)
        else:
            self._extras.move_to_end(session.id)
        user = target.user_id if target.user_id is not None else session.user_id or ""
        principal = Principal(target.adapter, user)
        scope = SessionScope.of(target.adapter, target.chat_type, target.chat_id, user)
        ports = AgentPorts(search=_SearchPort(self._index, scope),
                           send_message=None if quiet else _SendPort(self._delivery, target))
        if not quiet and self._approvals is not None:
            ports.approval = TurnApprovals(self._approvals, target, principal,
                                           session_id=session.id,
                                           timeout_s=self._approval_timeout_s)
        await self._ensure_workspace(principal)
        prompt = session.system_prompt or await self._agents.system_prompt(
            audience=audience_of(session))
        return self._agents.build(
            prompt, session_id=session.id, ports=ports, principal=principal, extra=extra,
            attachments_dir=self._agents.spaces.chat_cache(target.adapter, target.chat_id))

    async def _ensure_workspace(self, principal: Principal) -> None:
        """Create the user's workspace folder the first time this process needs it."""
        path = self._agents.spaces.workspace(principal)
        if path in self._workspaces:
            return
        await asyncio.to_thread(path.mkdir, parents=True, exist_ok=True, mode=0o700)
        if len(self._workspaces) >= MAX_SESSION_EXTRAS:
            self._workspaces.clear()
        self._workspaces.add(path)
