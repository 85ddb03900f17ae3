"""What a command handler receives: the invocation and the gateway's services."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from gateway.compression.outcome import JobOutcome
from gateway.events import MessageEvent
from gateway.pipeline.authz import AccessPolicy
from gateway.principals import scope_of_event
from storage.ports import LineageStore, MessageLog, SessionReader, SessionWriter
from storage.types import Session, SessionScope

if TYPE_CHECKING:
    from gateway.commands.registry import CommandRegistry
    from gateway.commands.skills import SkillsInfo
    from gateway.commands.tools import ToolsInfo
    from gateway.sessions import SessionManager
    from gateway.turns import SessionResolver

__all__ = ["ApprovalDecider", "CommandContext", "CommandServices", "CommandStore",
           "ManualCompression"]


class CommandStore(SessionReader, SessionWriter, MessageLog, LineageStore, Protocol):
    """The storage the built-in commands use (sessions, /undo, lineage, /branch, /resume)."""


class ManualCompression(Protocol):
    """/compress: compress now through the same pool, lease and fence."""

    async def compress_now(self, session_id: str, *, force: bool = True,
                           focus: str | None = None, keep_last_turns: int | None = None,
                           preview: bool = False) -> JobOutcome:
        """Must not raise (failures are a `failed` outcome)."""
        ...


class ApprovalDecider(Protocol):
    """/approve and /deny: decide a request waiting in a chat (`gateway.approvals`)."""

    async def decide(self, *, platform: str, chat_id: str, user_id: str, approve: bool,
                     is_admin: bool, approval_id: str | None = None) -> str:
        """The reply for the chat. Must not raise."""
        ...


@dataclass(slots=True)
class CommandServices:
    """Collaborators of the command handlers (injected by the runner)."""

    store: CommandStore
    manager: SessionManager
    sessions: SessionResolver
    compression: ManualCompression | None
    policy: AccessPolicy
    model: str
    context_length: int
    registry: CommandRegistry | None = None
    approvals: ApprovalDecider | None = None
    tools: ToolsInfo | None = None
    skills: SkillsInfo | None = None


@dataclass(slots=True)
class CommandContext:
    """One command invocation."""

    event: MessageEvent
    key: str
    args: str
    services: CommandServices
    is_admin: bool = False

    @property
    def scope(self) -> SessionScope:
        """The sessions the sender may see and address from this chat (their own direct
        chats' in a direct chat, the chat's in a group); nothing outside it is ever named."""
        return scope_of_event(self.event)

    async def session(self) -> Session | None:
        """The chat's live session, or None when it has none yet."""
        return await self.services.store.find_by_session_key(self.key)
