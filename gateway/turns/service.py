"""The turn layer: one user turn from the mailbox to the delivered reply."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import structlog

from agent_core import events as ae
from agent_core.interrupt import InterruptSignal
from agent_core.ports import AgentPorts
from gateway.agents import AgentFactory
from gateway.delivery.service import DeliveryService, PreparedFinal, ReplyTarget
from gateway.delivery.stream import Rendered, StreamConsumer
from gateway.events import MessageEvent
from gateway.logging import bind_context
from gateway.sessions.inbox import event_keys
from gateway.sessions.reset import ResetMode, reset_reason
from gateway.turns.transcript import TurnTranscript

__all__ = ["CompressionHook", "TurnService", "TurnSettings"]

log = structlog.get_logger("gateway.turns")

ToolProgress = Literal["off", "new", "all"]
INTERRUPTED_NOTE = "⏹ Interrupted."
QUIET_MEMORY_PROMPT = (
    "[System note: this conversation is about to be reset. If anything from it is worth "
    "remembering in future conversations, save it now with the memory tool. Reply with OK.]"
)


class CompressionHook(Protocol):
    """What turns need from the compression scheduler (gateway.compression)."""

    async def wait_idle(self, session_id: str, within_s: float) -> bool: ...

    async def after_turn(self, session_id: str, prompt_tokens: int | None,
                         stored: Any = None) -> None:
        """`stored`: the session's guard state from before the turn's usage was recorded."""

    async def compress_for_overflow(self, session_id: str) -> str | None:
        """Compress now (forced); returns the session id to continue in, or None."""


@dataclass(frozen=True, slots=True)
class TurnSettings:
    tool_progress: Callable[[str], ToolProgress] = lambda _p: "new"
    reset_mode: ResetMode = "none"
    idle_minutes: int = 1440
    daily_hour: int = 4
    compression_wait_s: float = 10.0
    format_hints: Callable[[str], str] = lambda _p: ""


class _SearchPort:
    def __init__(self, store: Any) -> None:
        self._store = store

    async def search(self, query: str, *, limit: int = 5) -> list[dict[str, Any]]:
        hits = await self._store.search(query, limit=limit)
        return [h.to_dict() for h in hits]


class _SendPort:
    def __init__(self, delivery: DeliveryService, target: ReplyTarget) -> None:
        self._delivery = delivery
        self._target = target

    async def send(self, text: str) -> None:
        await self._delivery.notify(self._target, text)


class TurnService:
    """Implements the session manager's `TurnHandler`."""

    def __init__(
        self,
        store: Any,
        delivery: DeliveryService,
        agents: AgentFactory,
        *,
        settings: TurnSettings = TurnSettings(),
        compression: CompressionHook | None = None,
        metrics: Any = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._delivery = delivery
        self._agents = agents
        self._s = settings
        self.compression = compression
        self._metrics = metrics
        self._clock = clock
        self._extras: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._background: set[asyncio.Task[Any]] = set()
        self._running: dict[str, tuple[Any, list[MessageEvent]]] = {}
        #: called with (key, events) for steered messages a turn ended without using
        self.requeue: Callable[[str, list[MessageEvent]], None] = lambda _k, _e: None
        self.on_turn_started: Callable[[str], None] = lambda _key: None

    # -- TurnHandler -----------------------------------------------------------------------
    async def notify(self, event: MessageEvent, text: str) -> None:
        """Send a notice without making the caller (the inbound path) wait for it."""
        task = asyncio.create_task(self._delivery.notify(ReplyTarget.of(event), text),
                                   name=f"notice:{event.platform}:{event.chat_id}")
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def steer(self, key: str, event: MessageEvent) -> bool:
        """Busy mode `steer`: hand the text to the running agent (used after its next tool
        batch). Steers the turn did not consume are queued as the next turn afterwards."""
        running = self._running.get(key)
        if running is None or not event.text.strip() or event.attachments:
            return False
        agent, pending = running
        if not agent.steer(event.text):
            return False
        pending.append(event)
        return True

    async def run_turn(
        self, key: str, events: list[MessageEvent], interrupt: InterruptSignal
    ) -> None:
        last = events[-1]
        target = ReplyTarget.of(last)
        ok, error = True, None
        with bind_context(platform=last.platform, session_key=key):
            try:
                await self._turn(key, events, target, interrupt)
            except Exception as exc:
                ok, error = False, type(exc).__name__
                log.exception("turn_crashed", session_key=key)
                # The user is told it failed (and may resend): not re-run after a restart.
                with contextlib.suppress(Exception):
                    await self._store.inbound_release(event_keys(events))
                await self._delivery.notify(
                    target, f"⚠️ Sorry, something went wrong ({type(exc).__name__}). "
                    "Please try again, or send /new to start over.")
            finally:
                for ev in events:
                    await self._delivery.turn_complete(ReplyTarget.of(ev), ok=ok, error=error)

    # -- sessions ----------------------------------------------------------------------------
    async def resolve_session(self, key: str, event: MessageEvent) -> tuple[Any, str | None]:
        """The live session for `key` (created when missing), after the reset policy."""
        session = await self._store.find_by_session_key(key)
        notice = None
        if session is not None:
            why = reset_reason(
                self._s.reset_mode, last_activity=session.last_activity or session.started_at,
                now=self._clock(), idle_minutes=self._s.idle_minutes,
                daily_hour=self._s.daily_hour)
            if why:
                await self._quiet_memory_turn(session, event)
                await self._store.end_session(session.id, "session_reset")
                notice = f"♻️ Started a new session ({why}). Send /resume to go back."
                session = None
        if session is None:
            session = await self.new_session(key, event)
        return session, notice

    async def new_session(self, key: str, event: MessageEvent, title: str | None = None) -> Any:
        prompt = await self._agents.system_prompt(
            platform_hint=self._s.format_hints(event.platform))
        return await self._store.create_session(
            source=event.platform, user_id=event.user.id, session_key=key,
            chat_id=event.chat_id, chat_type=event.chat_type.value, thread_id=event.thread_id,
            model=self._agents.model, system_prompt=prompt, title=title)

    async def _quiet_memory_turn(self, session: Any, event: MessageEvent) -> None:
        """Before a reset, one undelivered turn in which the agent may save memories."""
        try:
            history = await self._store.load_history(session.id)
            if not history:
                return
            agent = await self._build_agent(session, ReplyTarget.of(event), quiet=True)
            async for ev in agent.run_turn(history, QUIET_MEMORY_PROMPT):
                if isinstance(ev, ae.TERMINAL_EVENTS):
                    break
        except Exception:
            log.warning("quiet_memory_turn_failed", session_id=session.id)

    async def _build_agent(self, session: Any, target: ReplyTarget, *,
                           quiet: bool = False) -> Any:
        extra = self._extras.get(session.id)
        if extra is None:
            extra = self._extras[session.id] = {}
            while len(self._extras) > 2048:
                self._extras.popitem(last=False)
        ports = AgentPorts(search=_SearchPort(self._store),
                           send_message=None if quiet else _SendPort(self._delivery, target))
        prompt = session.system_prompt or await self._agents.system_prompt()
        return self._agents.build(prompt, session_id=session.id, ports=ports, extra=extra)

    # -- the turn ------------------------------------------------------------------------------
    async def _turn(self, key: str, events: list[MessageEvent], target: ReplyTarget,
                    interrupt: InterruptSignal) -> None:
        last = events[-1]
        session, notice = await self.resolve_session(key, last)
        if notice:
            await self._delivery.notify(target, notice)
        if self.compression is not None and not await self.compression.wait_idle(
                session.id, self._s.compression_wait_s):
            log.info("turn_proceeds_uncompressed", session_id=session.id)
        # A compression may have rotated the session meanwhile: the store follows it to the
        # tip (the reset policy is not applied a second time; it would reset the new child).
        self.on_turn_started(key)
        recovered = isinstance(last.raw, dict) and last.raw.get("recovered_message_id")
        sid = session.id
        if not recovered:  # stored, and the events' durable hold let go, in one transaction
            sid, _ = await self._store.append_live(sid, [_user_message(events)],
                                                   release=event_keys(events))
        session, history = await self._store.live_history(sid)
        with bind_context(session_id=session.id):
            await self._run_agent(session, history, target, interrupt, key=key)

    async def _run_agent(self, session: Any, history: list[dict[str, Any]],
                         target: ReplyTarget, interrupt: InterruptSignal,
                         key: str | None = None) -> None:
        consumer = self._delivery.begin(target)
        typing = self._delivery.typing_loop(target)
        progress = self._s.tool_progress(target.adapter)
        shown = TurnTranscript()
        agent = await self._build_agent(session, target)
        steered: list[MessageEvent] = []
        tools_seen: list[str] = []
        if key is not None:
            self._running[key] = (agent, steered)
        started = time.monotonic()
        outcome = "interrupted"  # until a terminal event says otherwise
        user_turn: dict[str, Any] | None = history[-1] if history else None
        prior = history[:-1]
        continued = False
        released = 0  # steered events whose hold was let go with the turn's messages
        try:
            while True:
                terminal = None
                async for ev in agent.run_turn(prior, user_turn, interrupt=interrupt):
                    if isinstance(ev, ae.TextDelta):
                        shown.delta(ev.text)
                        if consumer is not None:
                            consumer.on_delta(ev.text)
                    elif isinstance(ev, ae.ToolStarted):
                        shown.close_segment()
                        line = _progress_line(progress, tools_seen, ev.name)
                        if consumer is not None and line is not None:
                            consumer.on_status(line)
                    elif isinstance(ev, ae.Status) and ev.kind == "stream_reset":
                        shown.reset_segment()
                    elif isinstance(ev, ae.Usage):
                        shown.usage.append(ev)
                    elif isinstance(ev, ae.TERMINAL_EVENTS):
                        terminal = ev
                if terminal is None:
                    return
                final = None
                if isinstance(terminal, ae.Final):
                    # Outbox first: after a crash the reply is re-sent, and the turn is
                    # known to be answered even if the messages below were not stored.
                    final = await self._delivery.record_final(
                        target, shown.final(terminal.text), session_id=session.id,
                        preview_message_id=consumer.message_id if consumer else None)
                if terminal.messages:
                    taken = steered[:agent.steered]
                    sid, _ = await self._store.append_live(
                        session.id, list(terminal.messages), release=event_keys(taken))
                    released = len(taken)
                    if sid != session.id:
                        session = await self._store.get_session(sid) or session
                if (isinstance(terminal, ae.CompressionNeeded) and not continued
                        and self.compression is not None):
                    continued = True
                    if consumer is not None:
                        consumer.on_status("🗜 Compacting the conversation…")
                    new_id = await self.compression.compress_for_overflow(session.id)
                    if new_id:
                        session = await self._store.get_session(new_id)
                        prior, user_turn = await self._store.load_history(new_id), None
                        agent.set_system_prompt(session.system_prompt or agent.system_prompt)
                        continue
                outcome = ("ok" if isinstance(terminal, ae.Final) else "interrupted"
                           if isinstance(terminal, ae.Interrupted) else "error")
                await self._finish(session, terminal, shown, consumer, target, final)
                return
        finally:
            if key is not None and self._running.get(key, (None,))[0] is agent:
                del self._running[key]
                leftover = steered[agent.steered:]
                if agent.steered > released:  # taken in, but no messages were stored
                    with contextlib.suppress(Exception):
                        await self._store.inbound_release(
                            event_keys(steered[released:agent.steered]))
                for ev in steered[:agent.steered]:
                    await self._delivery.turn_complete(ReplyTarget.of(ev), ok=True)
                if leftover:
                    self.requeue(key, leftover)
            if typing is not None:
                typing.cancel()
            if consumer is not None:
                await consumer.stop_streaming()
            # Bookkeeping after the reply: the usage write hands back the guard state the
            # compression check needs (no read of its own, no race with the write).
            stored = await self._record_usage(session.id, shown)
            await self._after_turn(session, outcome == "ok", shown, stored)
            if self._metrics is not None:
                self._metrics.observe_turn(time.monotonic() - started, outcome=outcome)

    async def _finish(self, session: Any, terminal: Any, shown: TurnTranscript,
                      consumer: StreamConsumer | None, target: ReplyTarget,
                      final: PreparedFinal | None) -> None:
        if isinstance(terminal, ae.Final) and final is not None:
            await self._delivery.send_final(final, consumer)
            return
        if isinstance(terminal, ae.Interrupted):
            if consumer is not None and consumer.message_id is not None:
                text = f"{shown.shown()}\n\n{INTERRUPTED_NOTE}".strip()
                with contextlib.suppress(Exception):
                    await consumer.finish(Rendered([text], formatted=False),
                                          lambda: Rendered([text], formatted=False))
            return
        message = (terminal.error.message if isinstance(terminal, ae.Error)
                   else getattr(terminal, "message", "the request failed"))
        text = (f"⚠️ The model request failed: {message}\n"
                "Try again in a moment, or send /new to start over.")
        await self._delivery.deliver_final(target, text, session_id=session.id,
                                           consumer=consumer)

    async def _after_turn(self, session: Any, ok: bool, shown: TurnTranscript,
                          stored: Any) -> None:
        """After a completed turn, the compression scheduler judges the real prompt size."""
        if ok and self.compression is not None:
            last = shown.usage[-1].prompt_tokens if shown.usage else None
            await self.compression.after_turn(session.id, last, stored)

    async def _record_usage(self, session_id: str, shown: TurnTranscript) -> Any:
        """Add the turn's usage; returns the guard state from before it (None when nothing
        was recorded)."""
        if not shown.usage:
            return None
        u = shown.usage
        stored = None
        try:
            stored = await self._store.add_usage(
                session_id,
                input_tokens=sum(x.prompt_tokens for x in u),
                output_tokens=sum(x.completion_tokens for x in u),
                cache_read_tokens=sum(x.cached_tokens for x in u),
                reasoning_tokens=sum(x.reasoning_tokens for x in u),
                api_calls=len(u),
                last_prompt_tokens=u[-1].prompt_tokens or None,
            )
        except Exception:
            log.warning("usage_not_recorded", session_id=session_id)
        if self._metrics is not None:
            self._metrics.add_tokens(prompt=sum(x.prompt_tokens for x in u),
                                     completion=sum(x.completion_tokens for x in u))
        return stored


def _progress_line(policy: str, seen: list[str], name: str) -> str | None:
    """The status line under the streaming preview. off: none. new: the current tool, shown
    when a different tool starts. all: the latest calls, one line each (last five)."""
    if policy == "off":
        return None
    repeat = bool(seen) and seen[-1] == name
    seen.append(name)
    if policy == "all":
        return "\n".join(f"🔧 {n}" for n in seen[-5:])
    return None if repeat else f"🔧 {name}…"


def _user_message(events: list[MessageEvent]) -> dict[str, Any]:
    texts = []
    for ev in events:
        text = ev.text
        if ev.attachments:
            listed = "\n".join(f"[attachment: {a.kind} {a.name or ''} at {a.path}]".replace("  ", " ")
                               for a in ev.attachments)
            text = f"{text}\n{listed}" if text else listed
        texts.append(text)
    msg: dict[str, Any] = {"role": "user", "content": "\n".join(t for t in texts if t)}
    msg["_event_ids"] = [f"{e.platform}:{e.event_id}" for e in events]
    if events[-1].message_id:
        msg["_platform_message_id"] = events[-1].message_id
    return msg


