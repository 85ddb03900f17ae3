"""`AgentBuilder`: an agent for one session's turn, with the ports the gateway gives it."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from pathlib import Path
from typing import Any

from agent_core.agent import Agent
from agent_core.ports import AgentPorts
from agent_core.tools.toolsets import ToolSelection
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
        self._tools: OrderedDict[str, ToolSelection] = OrderedDict()
        self._workspaces: set[Path] = set()

    @property
    def model(self) -> str:
        return self._agents.model

    async def system_prompt(self, *, platform_hint: str = "", audience: Principal | None = None,
                            platform: str | None = None, chat_id: str | None = None) -> str:
        return await self._agents.system_prompt(platform_hint=platform_hint, audience=audience,
                                                platform=platform, chat_id=chat_id)

    def session_tools(self, session: Session) -> ToolSelection:
        """The tools `session` is offered: chosen at its first turn in this process and kept
        for its life, so the request's `tools` stay byte-identical while MCP servers come and
        go or the config changes (the next session sees the change)."""
        selection = self._tools.get(session.id)
        if selection is None:
            selection = self._tools[session.id] = self._agents.selection(
                session.source or None, session.chat_id)
            while len(self._tools) > MAX_SESSION_EXTRAS:
                self._tools.popitem(last=False)
        else:
            self._tools.move_to_end(session.id)
        return selection

    def current_tools(self, session_id: str) -> ToolSelection | None:
        """The selection a session uses in this process, if it had a turn here."""
        return self._tools.get(session_id)

    def next_tools(self, platform: str, chat_id: str) -> ToolSelection:
        """What a new session in this chat would be offered now."""
        return self._agents.selection(platform, chat_id)

    def skills_root(self) -> Path | None:
        """The profile's skills folder for `/skills` (None: `skills.enabled` is false)."""
        return self._agents.skills_root

    def confinement(self) -> list[str]:
        """execute_code's sandbox and terminal's approvals, for `/tools`."""
        return self._agents.acting.describe()

    @staticmethod
    def principal_of(session: Session, target: ReplyTarget) -> Principal:
        """Whom a turn of `session` answering `target` acts for: the target's user (the
        session's owner when the target names none)."""
        user = target.user_id if target.user_id is not None else session.user_id or ""
        return Principal(target.adapter, user)

    async def build(self, session: Session, target: ReplyTarget, *,
                    quiet: bool = False) -> Agent:
        """The agent of a turn answering `target.user_id` (the session's owner when the
        target names no user): its tools act for that user, its search sees what that user
        may see from the target's chat, its memory provider (if any) recalls that user's
        memories. `quiet`: no `send_message` port and no memory provider (a turn whose output
        nobody sees)."""
        extra = self._extras.get(session.id)
        if extra is None:
            extra = self._extras[session.id] = {}
            while len(self._extras) > MAX_SESSION_EXTRAS:
                self._extras.popitem(last=False)
        else:
            self._extras.move_to_end(session.id)
        principal = self.principal_of(session, target)
        user = principal.user_id
        scope = SessionScope.of(target.adapter, target.chat_type, target.chat_id, user)
        ports = AgentPorts(search=_SearchPort(self._index, scope),
                           send_message=None if quiet else _SendPort(self._delivery, target))
        if not quiet and self._approvals is not None:
            ports.approval = TurnApprovals(self._approvals, target, principal,
                                           session_id=session.id,
                                           timeout_s=self._approval_timeout_s)
        await self._ensure_workspace(principal)
        tools = self.session_tools(session)
        prompt = session.system_prompt or await self._agents.system_prompt(
            audience=audience_of(session), platform=session.source or None,
            chat_id=session.chat_id)
        memory = self._agents.memory
        return self._agents.build(
            prompt, session_id=session.id, ports=ports, principal=principal, extra=extra,
            attachments_dir=self._agents.spaces.chat_cache(target.adapter, target.chat_id),
            tools=tools,
            memory=memory.for_turn(session, principal) if memory and not quiet else None)

    async def _ensure_workspace(self, principal: Principal) -> None:
        """Create the user's workspace folder the first time this process needs it."""
        path = self._agents.spaces.workspace(principal)
        if path in self._workspaces:
            return
        await asyncio.to_thread(path.mkdir, parents=True, exist_ok=True, mode=0o700)
        if len(self._workspaces) >= MAX_SESSION_EXTRAS:
            self._workspaces.clear()
        self._workspaces.add(path)
