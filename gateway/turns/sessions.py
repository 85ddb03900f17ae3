"""`SessionResolver`: which session a turn runs in (the reset policy), and new sessions."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from agent_core import events as ae
from gateway.delivery.service import ReplyTarget
from gateway.events import MessageEvent
from gateway.memory import GatewayMemory
from gateway.sessions.reset import ResetMode, reset_reason
from gateway.turns.builder import AgentBuilder
from gateway.turns.ports import SessionStore
from storage.types import LiveCheck, Session

__all__ = ["QUIET_MEMORY_PROMPT", "ResetPolicy", "SessionResolver"]

log = structlog.get_logger("gateway.turns")

#: Keys whose live session is remembered between turns (the least recently used go first;
#: a key forgotten only costs its next turn one lookup).
KNOWN_SESSIONS_MAX = 4096

QUIET_MEMORY_PROMPT = (
    "[System note: this conversation is about to be reset. If anything from it is worth "
    "remembering in future conversations, save it now with the memory tool. Reply with OK.]"
)


@dataclass(frozen=True, slots=True)
class ResetPolicy:
    """`gateway.session_reset`."""

    mode: ResetMode = "none"
    idle_minutes: int = 1440
    daily_hour: int = 4


class SessionResolver:
    """Finds the live session of a routing key, applying the reset policy on every path,
    and creates sessions with a freshly built system prompt."""

    def __init__(
        self,
        store: SessionStore,
        agents: AgentBuilder,
        *,
        policy: ResetPolicy = ResetPolicy(),
        format_hint: Callable[[str], str] = lambda _platform: "",
        clock: Callable[[], float] = time.time,
        memory: GatewayMemory | None = None,
    ) -> None:
        self._store = store
        self._memory = memory
        self._agents = agents
        self._policy = policy
        self._format_hint = format_hint
        self._clock = clock
        self._known: OrderedDict[str, str] = OrderedDict()

    # -- the live session a key had at its last turn ------------------------------------------
    # A turn stores its message in the session its key's last turn used, without looking it
    # up first (a read less per turn), under a `LiveCheck`: the write is refused when that
    # session is no longer the key's live one (/new, /resume, another process) or the reset
    # policy would end it, and the turn then resolves the key as usual.
    def known(self, key: str) -> str | None:
        """The session `key`'s last turn ran in, if remembered."""
        sid = self._known.get(key)
        if sid is not None:
            self._known.move_to_end(key)
        return sid

    def remember(self, key: str, session_id: str) -> None:
        self._known[key] = session_id
        self._known.move_to_end(key)
        if len(self._known) > KNOWN_SESSIONS_MAX:
            self._known.popitem(last=False)

    def forget(self, key: str) -> None:
        self._known.pop(key, None)

    def live_check(self, key: str) -> LiveCheck:
        """The check a write to `known(key)` goes under: still live, and not due a reset."""
        return LiveCheck(key, lambda session: self._reset_reason(session) is None)

    def _reset_reason(self, session: Session) -> str | None:
        p = self._policy
        if p.mode == "none":
            return None
        return reset_reason(
            p.mode, last_activity=session.last_activity or session.started_at,
            now=self._clock(), idle_minutes=p.idle_minutes, daily_hour=p.daily_hour)

    async def resolve(self, key: str, event: MessageEvent) -> tuple[Session, str | None]:
        """The live session for `key` (created when missing) and, when the policy reset the
        old one, the notice to show the user."""
        self.forget(key)
        session = await self._store.find_by_session_key(key)
        notice = None
        if session is not None:
            why = self._reset_reason(session)
            if why:
                await self._quiet_memory_turn(session, event)
                await self.end(session, "session_reset")
                notice = f"♻️ Started a new session ({why}). Send /resume to go back."
                session = None
        if session is None:
            session = await self.new_session(key, event)
        return session, notice

    async def end(self, session: Session, reason: str) -> None:
        """End `session` (`new_session`, `session_reset`, `branched`, `switched`) and tell
        the memory provider (queued)."""
        await self._store.end_session(session.id, reason)
        if self._memory is not None:
            self._memory.ended(session, reason)

    async def new_session(self, key: str, event: MessageEvent,
                          title: str | None = None) -> Session:
        """A new live session for the chat of `event`. Raises `ValueError` (a
        `TitleInUseError` / `InvalidTitleError`) for a title that cannot be used."""
        prompt = await self._agents.system_prompt(
            platform_hint=self._format_hint(event.platform),
            audience=None if event.is_group else event.principal,
            platform=event.platform, chat_id=event.chat_id)
        return await self._store.create_session(
            source=event.platform, user_id=event.user.id, session_key=key,
            chat_id=event.chat_id, chat_type=event.chat_type.value, thread_id=event.thread_id,
            model=self._agents.model, system_prompt=prompt, title=title)

    async def _quiet_memory_turn(self, session: Session, event: MessageEvent) -> None:
        """Before a reset, one undelivered turn in which the agent may save memories. Must
        not raise: a failure only costs the memories."""
        try:
            history = await self._store.load_history(session.id)
            if not history:
                return
            agent = await self._agents.build(session, ReplyTarget.of(event), quiet=True)
            async for ev in agent.run_turn(history, QUIET_MEMORY_PROMPT):
                if isinstance(ev, ae.TERMINAL_EVENTS):
                    break
        except Exception as exc:  # noqa: BLE001 - see docstring
            log.warning("quiet_memory_turn_failed", session_id=session.id,
                        error=type(exc).__name__)
