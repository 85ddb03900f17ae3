"""`TurnService`: one user turn from the mailbox to the delivered reply.

It implements the session manager's `TurnHandler`. Its collaborators each do one job and are
passed in: `SessionResolver` (which session, the reset policy), `AgentBuilder` (the turn's
agent and ports), `SteerDesk` (busy mode `steer`), `UsageRecorder` (token counters), the
optional `CompressionHook` and the optional `ReviewHook` (background self-review, told after
the reply is delivered); `build_turns` wires them from the gateway's parts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from agent_core import events as ae
from agent_core.interrupt import InterruptSignal
from gateway.delivery.service import DeliveryService, PreparedFinal, ReplyTarget
from gateway.delivery.stream import Rendered, StreamConsumer
from gateway.events import MessageEvent
from gateway.logging import bind_context
from gateway.media import MediaReader
from gateway.media.replies import VoiceReplies
from gateway.metrics import GatewayMetrics
from gateway.sessions.inbox import event_keys
from gateway.sessions.worker import MERGE_REASON
from gateway.turns.builder import AgentBuilder
from gateway.turns.feed import Terminal, ToolProgress, feed_events
from gateway.turns.inputs import is_rerun, rerun_id, sync_memory, with_images
from gateway.turns.opening import TurnOpening
from gateway.turns.ports import (
    CompressionHook,
    FinishedTurn,
    ReviewHook,
    TurnStore,
)
from gateway.turns.sessions import SessionResolver
from gateway.turns.steering import SteerDesk, Steering
from gateway.turns.transcript import TurnTranscript
from gateway.turns.usage import UsageRecorder
from hermes_common.backoff import Backoff
from storage.errors import FenceRejected
from storage.fencing import current_fence
from storage.types import Session

__all__ = ["TurnService", "TurnSettings"]

log = structlog.get_logger("gateway.turns")

_RELEASE_RETRY = Backoff(base_s=0.25, cap_s=5.0)
_RELEASE_ATTEMPTS = 10  # about 30 s in all

INTERRUPTED_NOTE = "⏹ Interrupted."


@dataclass(frozen=True, slots=True)
class TurnSettings:
    tool_progress: Callable[[str], ToolProgress] = lambda _p: "new"
    compression_wait_s: float = 10.0
    #: A turn waits this long for the previous turn's images to be described for the
    #: history (`MediaReader.describe_for_history`) before it reads the history.
    description_wait_s: float = 30.0


class TurnService:
    """Implements `gateway.sessions.manager.TurnHandler`."""

    def __init__(
        self,
        store: TurnStore,
        delivery: DeliveryService,
        *,
        sessions: SessionResolver,
        agents: AgentBuilder,
        steering: SteerDesk,
        usage: UsageRecorder,
        compression: CompressionHook | None = None,
        settings: TurnSettings = TurnSettings(),
        metrics: GatewayMetrics | None = None,
        media: MediaReader | None = None,
        voice: VoiceReplies | None = None,
        reviews: ReviewHook | None = None,
    ) -> None:
        self._store = store
        self._reviews = reviews
        self._media = media or MediaReader()
        self._voice = voice
        self._delivery = delivery
        self.sessions = sessions
        self._agents = agents
        self._steering = steering
        self._usage = usage
        self._compression = compression
        self._s = settings
        self._metrics = metrics
        self._background: set[asyncio.Task[Any]] = set()
        #: Session key → the task describing its last turn's images for the history.
        self._describing: dict[str, asyncio.Task[None]] = {}
        self._opening = TurnOpening(store, sessions, delivery, compression,
                                    settings.compression_wait_s)

    async def aclose(self) -> None:
        """Cancel the image descriptions still running (their messages keep their image
        lines) and stop the media reader's document process. Must not raise."""
        tasks = list(self._describing.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._media.aclose()

    @property
    def builder(self) -> AgentBuilder:
        """The turn's agent builder (the sessions' tool selections, for `/tools`)."""
        return self._agents

    # -- TurnHandler -----------------------------------------------------------------------
    async def notify(self, event: MessageEvent, text: str) -> None:
        """Send a notice without making the caller (the inbound path) wait for it."""
        task = asyncio.create_task(self._delivery.notify(ReplyTarget.of(event), text),
                                   name=f"notice:{event.platform}:{event.chat_id}")
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def steer(self, key: str, event: MessageEvent) -> bool:
        """Busy mode `steer`: hand the text to the running agent (used after its next tool
        batch). Steers the turn did not use come back from `run_turn` as the next turn."""
        return await self._steering.steer(key, event)

    async def run_turn(
        self, key: str, events: list[MessageEvent], interrupt: InterruptSignal
    ) -> list[MessageEvent]:
        """Run one turn for `events` (one or a merged burst). Returns the events that must run
        as the next turn (steered texts the agent never used). Must not raise: a failure is
        logged and the user told."""
        last = events[-1]
        target = ReplyTarget.of(last)
        ok, error = True, None
        leftover: list[MessageEvent] = []
        finished: list[FinishedTurn] = []  # filled when the turn ended with its reply out
        if self._reviews is not None:
            self._reviews.turn_began(key)
        with bind_context(platform=last.platform, session_key=key):
            try:
                leftover = await self._turn(key, events, target, interrupt, finished)
            except Exception as exc:
                if isinstance(exc, FenceRejected) and current_fence() is not None:
                    # This replica lost the session mid-turn (another replica took it
                    # over): nothing of the turn was stored or sent, its events stay held
                    # and the new owner answers them. Nothing to tell the user.
                    ok, error = False, "lease_lost"
                    log.warning("turn_fenced", session_key=key, outcome=exc.outcome)
                else:
                    ok, error = False, type(exc).__name__
                    await self._crashed(key, events, target, exc)
            finally:
                for ev in events:
                    await self._delivery.turn_complete(ReplyTarget.of(ev), ok=ok, error=error)
                if self._reviews is not None and finished:
                    # Everything of the turn is done and answered: the review only queues
                    # here and runs on its own pool, never ahead of the reply.
                    self._reviews.after_turn(finished[0])
        return leftover

    async def _crashed(self, key: str, events: list[MessageEvent], target: ReplyTarget,
                       exc: Exception) -> None:
        log.exception("turn_crashed", session_key=key, exc_info=exc)
        await self._delivery.notify(
            target, f"⚠️ Sorry, something went wrong ({type(exc).__name__}). "
            "Please try again, or send /new to start over.")
        # The user is told it failed (and may resend): not re-run after a restart.
        # Shielded: a newer message interrupting (cancelling) this turn must not cut the
        # retry short.
        release = asyncio.create_task(self._release_crashed(key, events),
                                      name=f"turn-release:{key}")
        self._background.add(release)
        release.add_done_callback(self._background.discard)
        await asyncio.shield(release)

    async def _release_crashed(self, key: str, events: list[MessageEvent]) -> None:
        """Let go of a crashed turn's held events, retrying for about 30 s (a full disk
        often fails this too). Awaited by the turn, so the session's newer messages wait
        behind it: an event left held is queued again by the next start and answered after
        them (chaos seed 9). Still failing after that, it stays held for the next start."""
        for attempt in range(1, _RELEASE_ATTEMPTS + 1):
            try:
                await self._store.inbound_release(event_keys(events))
                return
            except Exception as exc:  # noqa: BLE001 - retried; held until the next start
                log.warning("turn_release_failed", session_key=key, attempt=attempt,
                            error=type(exc).__name__)
                if attempt < _RELEASE_ATTEMPTS:
                    await asyncio.sleep(_RELEASE_RETRY.delay(attempt))

    # -- the turn ------------------------------------------------------------------------------
    async def _turn(self, key: str, events: list[MessageEvent], target: ReplyTarget,
                    interrupt: InterruptSignal,
                    finished: list[FinishedTurn]) -> list[MessageEvent]:
        last = events[-1]
        # A turn re-run after a restart carries a message already stored: only the others
        # of its batch (a burst, or what queued behind an interrupt) are stored now.
        fresh = [ev for ev in events if not is_rerun(ev)]
        describing = self._describing.get(key)
        # Nothing to wait for before the history is read: the message is stored and the
        # history read in one transaction, in the session the key's last turn used (checked
        # there, so no lookup first) when it is remembered.
        quick = bool(fresh) and (describing is None or describing.done())
        remembered = self.sessions.known(key) if quick else None
        sid = remembered or await self._opening.resolve(key, last, target)
        await self._opening.compression_settled(sid)
        # A compression may have rotated the session meanwhile: the store follows it to the
        # tip (the reset policy is not applied a second time; it would reset the new child).
        images: dict[int, list[dict[str, Any]]] = {}  # message id -> this turn's image parts
        spoke = False
        read: tuple[Session, list[dict[str, Any]]] | None = None
        if fresh:  # stored, and the events' durable hold let go, in one transaction
            understood = await self._media.read(fresh)
            for note in understood.notices:
                await self._delivery.notify(target, note)
            spoke = understood.spoke
            if quick:
                session, history, ids = await self._opening.append_first(
                    key, last, target, sid, understood.message, fresh, known=remembered is not None)
                read = session, history
            else:
                sid, ids = await self._store.append_live(sid, [understood.message],
                                                         release=event_keys(fresh))
            if understood.parts and ids:
                images[ids[-1]] = understood.parts
        if read is None:
            await self._described(key)
            read = await self._store.live_history(sid)
        session, history = read
        if images and history and history[-1].get("role") == "user":
            known = {m.get("_id") for m in history}
            if any(i not in known for i in images):
                # A compression rotated the session in between: the message has a new id.
                images = {int(history[-1]["_id"]): next(iter(images.values()))}
        for ev in events:  # a turn re-run after a restart sends its images again
            answered = rerun_id(ev)
            if answered is None:
                continue
            stored = next((m for m in history if m.get("_id") == answered), None)
            if stored is not None:
                images[answered] = await self._media.parts_for(stored)
        describe: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        if images:  # (a long chat's history is walked only when a turn has images)
            describe = [(m, images[m["_id"]]) for m in history
                        if m.get("_id") in images and self._media.wants_description(m)]
            # This turn only: the stored messages keep the text stand-in of each image.
            history = [with_images(m, images.get(int(m.get("_id") or 0))) for m in history]
        with bind_context(session_id=session.id):
            log.debug("turn_started", session_key=key, session_id=session.id, events=len(events))
            return await self._run_agent(session, history, target, interrupt, key=key,
                                         finished=finished, spoke=spoke, describe=describe)

    async def _described(self, key: str) -> None:
        """Wait (bounded) for the previous turn's images to be described for the history."""
        task = self._describing.get(key)
        if task is None or task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), self._s.description_wait_s)
        except TimeoutError:
            log.info("turn_proceeds_undescribed", session_key=key)

    def _describe_later(self, key: str, session_id: str,
                        describe: Sequence[tuple[dict[str, Any], list[dict[str, Any]]]],
                        then: Callable[[], Awaitable[None]]) -> None:
        """After the turn: describe its images for the history, store the descriptions,
        then `then()` (the compression check, which must see them). In the background, so
        the reply is not held up; the session's next turn waits for it (bounded)."""

        async def run() -> None:
            try:
                for message, parts in describe:
                    content = await self._media.describe_for_history(message, parts)
                    if content is not None:
                        await self._store.revise_message(
                            int(message["_id"]), content, {"_images_described": True})
            except Exception as exc:  # noqa: BLE001 - the image lines stay as they are
                log.warning("history_description_failed", session_id=session_id,
                            error=type(exc).__name__)
            await then()

        task = asyncio.create_task(run(), name=f"describe-images:{key}")
        self._describing[key] = task

        def forget(t: asyncio.Task[None]) -> None:
            if self._describing.get(key) is t:
                del self._describing[key]

        task.add_done_callback(forget)

    async def _run_agent(self, session: Session, history: list[dict[str, Any]],
                         target: ReplyTarget, interrupt: InterruptSignal,
                         key: str, finished: list[FinishedTurn], spoke: bool = False,
                         describe: Sequence[tuple[dict[str, Any], list[dict[str, Any]]]] = (),
                         ) -> list[MessageEvent]:
        await self._delivery.wait_earlier_finals(target)  # answers keep their order
        consumer = self._delivery.begin(target)
        typing = self._delivery.typing_loop(target)
        progress = self._s.tool_progress(target.adapter)
        shown = TurnTranscript()
        agent = await self._agents.build(session, target)
        steering = self._steering.begin(key, agent)
        tools_seen: list[str] = []
        started = time.monotonic()
        outcome = "interrupted"  # until a terminal event says otherwise
        terminal: Terminal | None = None
        user_turn: dict[str, Any] | None = history[-1] if history else None
        asked = user_turn  # what the memory provider's sync is given (kept across a continue)
        reply: str | None = None
        prior = history[:-1]
        continued = False
        try:
            while True:
                terminal = await feed_events(agent, prior, user_turn, interrupt, consumer,
                                              shown, progress, tools_seen)
                if terminal is None:
                    break
                session, final = await self._store_terminal(session, terminal, target,
                                                            consumer, shown, steering)
                if (isinstance(terminal, ae.CompressionNeeded) and not continued
                        and self._compression is not None):
                    continued = True
                    if consumer is not None:
                        consumer.on_status("🗜 Compacting the conversation…")
                    new_id = await self._compression.compress_for_overflow(session.id)
                    if new_id:
                        session = await self._store.require_session(new_id)
                        prior, user_turn = await self._store.load_history(new_id), None
                        agent.set_system_prompt(session.system_prompt or agent.system_prompt)
                        continue
                outcome = ("ok" if isinstance(terminal, ae.Final) else "interrupted"
                           if isinstance(terminal, ae.Interrupted) else "error")
                if isinstance(terminal, ae.Final):
                    reply = terminal.text
                await self._finish(session, terminal, shown, consumer, target, final,
                                   spoke=spoke)
                break
        except Exception:
            outcome = "error"  # a crash, logged by `run_turn`; not an interrupt
            await self._close_preview(consumer, shown)
            raise
        except asyncio.CancelledError:
            describe = ()  # cut off: see below
            raise
        finally:
            if interrupt.reason == "shutdown":
                # The message is answered by a re-run after the restart, which must still
                # send its images: nothing is described now.
                describe = ()
            used, leftover = await self._steering.end(key, steering)
            for ev in used:
                await self._delivery.turn_complete(ReplyTarget.of(ev), ok=True)
            if typing is not None:
                typing.cancel()
            if consumer is not None:
                await consumer.stop_streaming()
            if outcome == "ok" and reply is not None and agent.memory is not None:
                sync_memory(agent.memory, asked, reply)  # queued; never waits
            # Bookkeeping after the reply: the usage write hands back the guard state the
            # compression check needs (no read of its own, no race with the write).
            stored = shown.guard if shown.usage_stored else await self._usage.record(
                session.id, shown.usage, shown.delegated_usage, started_at=session.started_at)
            compression, sid = self._compression, session.id
            last_prompt = shown.usage[-1].prompt_tokens if shown.usage else None

            async def check_compression() -> None:
                if outcome == "ok" and compression is not None:
                    await compression.after_turn(sid, last_prompt, stored)

            if describe:
                self._describe_later(key, sid, describe, check_compression)
            else:
                await check_compression()
            if outcome == "ok" and self._reviews is not None and isinstance(terminal, ae.Final):
                finished.append(FinishedTurn(
                    key=key, session=session,
                    principal=self._agents.principal_of(session, target),
                    earlier=prior, turn=[*([user_turn] if user_turn else []),
                                         *terminal.messages],
                    tools=self._agents.session_tools(session)))
            took = time.monotonic() - started
            if self._metrics is not None:
                self._metrics.observe_turn(took, outcome=outcome)
            log.info("turn_finished", session_key=key, session_id=session.id, outcome=outcome,
                     duration_s=round(took, 3), model_calls=len(shown.usage),
                     input_tokens=sum(u.prompt_tokens for u in shown.usage),
                     output_tokens=sum(u.completion_tokens for u in shown.usage),
                     subagent_calls=len(shown.delegated_usage))
        return leftover

    async def _store_terminal(self, session: Session, terminal: Terminal, target: ReplyTarget,
                              consumer: StreamConsumer | None, shown: TurnTranscript,
                              steering: Steering) -> tuple[Session, PreparedFinal | None]:
        """Record the final in the outbox and store the turn's messages, letting go of the
        steered events they include, in one transaction (after a crash the reply is re-sent
        exactly when the turn was stored). Returns the session written to (a compression may
        have rotated it) and the recorded final."""
        draft, usage = None, None
        if isinstance(terminal, ae.Final):
            if consumer is not None:
                # A preview send still on its way lands first, so the row names the preview
                # the final replaces: recovery then finishes it in place instead of posting
                # the reply a second time (chaos seed 2020, a kill between the final's edit
                # of a preview that was still being posted and the "delivered" mark).
                await consumer.stop_streaming()
            draft = await self._delivery.draft_final(
                target, shown.final(terminal.text), session_id=session.id,
                preview_message_id=consumer.message_id if consumer else None)
        messages = list(terminal.messages)
        if isinstance(terminal, ae.Interrupted) and terminal.reason == MERGE_REASON:
            # Restarted with the burst's next part: the next attempt answers every part, so
            # the partial text of this one is no reply (kept, it would read as one).
            messages = [m for m in messages if m.get("finish_reason") != "interrupted"]
        final = None
        if not messages:
            if draft is not None:
                final = await self._delivery.record_final_draft(draft)
            return session, final
        taken = steering.taken
        if draft is not None:
            # The reply, the turn's messages and its usage in one transaction: after a
            # crash the reply is re-sent exactly when the turn is stored (and a replica
            # that lost the session records none of it); the usage needs no write of its
            # own after the reply.
            usage = self._usage.delta(shown.usage, shown.delegated_usage)
            stored = await self._store.append_with_final(
                session.id, messages, draft.row, release=event_keys(taken), usage=usage)
            sid, final = stored.session_id, draft.recorded(stored.outbox_id)
            if usage is not None:
                shown.usage_stored, shown.guard = True, stored.guard
        else:
            sid, _ = await self._store.append_live(
                session.id, messages, release=event_keys(taken))
        steering.released = len(taken)
        if sid != session.id:
            session = await self._store.get_session(sid) or session
        if usage is not None:
            self._usage.stored_with_reply(usage, session.started_at)
        return session, final

    async def _close_preview(self, consumer: StreamConsumer | None,
                             shown: TurnTranscript) -> None:
        """A turn that ends without its final (interrupted, or crashed: the failure notice
        follows) leaves its preview as shown so far with a note, not a streaming cursor."""
        if consumer is None or consumer.message_id is None:
            return
        text = f"{shown.shown()}\n\n{INTERRUPTED_NOTE}".strip()
        try:
            await consumer.finish(Rendered([text], formatted=False),
                                  lambda: Rendered([text], formatted=False))
        except Exception as exc:  # noqa: BLE001 - the preview stays as it was
            log.warning("interrupted_note_failed", error=type(exc).__name__)

    async def _finish(self, session: Session, terminal: Terminal, shown: TurnTranscript,
                      consumer: StreamConsumer | None, target: ReplyTarget,
                      final: PreparedFinal | None, *, spoke: bool = False) -> None:
        if isinstance(terminal, ae.Final):
            if final is not None:  # always recorded by `_store_terminal`
                sent = await self._delivery.send_final(final, consumer)
                # The user spoke: the reply is said too, after its text (only when that
                # went out now; a text retried later would come after its voice note).
                voice = self._voice
                if sent and voice is not None and voice.wanted(target, spoke=spoke):
                    await voice.reply(self._delivery, target, final.body)
            return
        if isinstance(terminal, ae.Interrupted):
            await self._close_preview(consumer, shown)
            return
        message = (terminal.error.message if isinstance(terminal, ae.Error)
                   else terminal.message)
        text = (f"⚠️ The model request failed: {message}\n"
                "Try again in a moment, or send /new to start over.")
        await self._delivery.deliver_final(target, text, session_id=session.id,
                                           consumer=consumer)
