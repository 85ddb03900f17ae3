"""`FakeAdapter`: an in-memory platform for full-stack tests and benchmarks.

Tests drive it from the user's side (`inject`) and read what the bot did from its transcript
(`messages`, `edits`, `typing_count`, `calls`, `turns_completed`). Failures are scriptable
(`fail_next`), and so is its life cycle for supervision tests (`raise_on_start`, `crash_after`,
`stall`, `hold_connect`).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, NamedTuple

from adapters.fake.records import FailureScript, FakeCall, FakeMessage, Op, TurnCompleted
from adapters.fake.settings import FakeSettings
from gateway.events import (
    Attachment,
    Button,
    ChatType,
    ErrorKind,
    InteractionEvent,
    MessageEvent,
    OutboundAttachment,
    OutboundMessage,
    SendResult,
    UserRef,
)
from gateway.ports import (
    AdapterContext,
    AdapterError,
    BasePlatformAdapter,
    BudgetSpec,
    Capabilities,
    RateProfile,
)
from hermes_common.waits import sleep_unless, wait_any

__all__ = ["FakeAdapter", "Injected"]


class Injected(NamedTuple):
    """What `inject` produced: the emitted event and whether the gateway saw it as new."""

    event: MessageEvent
    new: bool


class FakeAdapter(BasePlatformAdapter):
    """An in-memory platform. Capabilities are switched by the constructor.

    Platform rules it enforces like a real one: text longer than `max_length` (measured per
    `length_measure`) fails with `too_long`; editing an unknown or deleted message fails with
    `not_found`; an edit to the same text fails with `not_modified`; operations whose capability
    is off fail as unsupported. `send` and friends never raise.
    """

    settings: FakeSettings

    def __init__(
        self,
        name: str = "fake",
        settings: FakeSettings | Mapping[str, Any] | None = None,
        **switches: Any,
    ) -> None:
        """`settings` and keyword `switches` (which win) are `FakeSettings` keys, e.g.
        `FakeAdapter("fake", edit=False, max_length=100)`.

        Raises `pydantic.ValidationError` for an unknown key or a bad value.
        """
        self.name = name
        base = FakeSettings.coerce(settings)
        self.settings = s = FakeSettings.model_validate({**dict(base), **switches}) if switches \
            else base
        self.capabilities = Capabilities(
            edit=s.edit,
            typing=s.typing,
            reactions=s.reactions,
            threads=s.threads,
            media=s.media,
            delete=s.delete,
            max_length=s.max_length,
            length_measure=s.length_measure,
            dialect=s.dialect,
            rate_profile=RateProfile(per_chat=BudgetSpec(())),  # in memory: no limit
            liveness_window_s=s.liveness_window_s,
            trusted_auth=s.trusted_auth,
            push=s.push,
        )
        self.progress_interval_s = s.progress_interval_s
        self.inbox: list[MessageEvent] = []
        self.outbox: list[FakeMessage] = []
        self.calls: list[FakeCall] = []
        self.turns_completed: list[TurnCompleted] = []
        self.commands: list[tuple[str, str]] = []
        self.starts = 0
        self.stops = 0
        self._ctx: AdapterContext | None = None
        self._seq = 0
        self._failures = FailureScript()
        self._start_errors: deque[BaseException] = deque()
        self._crash_plan: deque[int] = deque()
        self._stalled = False
        self._gate: asyncio.Event | None = None
        self._connected = asyncio.Event()
        self._changed = asyncio.Condition()

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, ctx: AdapterContext) -> None:
        """Connect (after `hold_connect` is released), then report progress every
        `progress_interval_s` until `ctx.stop_event` is set. Raises what was scripted."""
        self.starts += 1
        self._ctx = ctx
        self._stalled = False
        self._connected.clear()
        if self._start_errors:
            raise self._start_errors.popleft()
        if self._gate is not None:
            await wait_any(self._gate, ctx.stop_event)
            if ctx.stop_event.is_set():
                return
        ctx.connected()
        self._connected.set()
        crash_at = self._crash_plan.popleft() if self._crash_plan else None
        ticks = 0
        while not ctx.stop_event.is_set():
            if crash_at is not None and ticks >= crash_at:
                self._connected.clear()
                raise AdapterError("scripted crash of the fake transport")
            if not self._stalled:
                ctx.progress()
            ticks += 1
            await sleep_unless(self.progress_interval_s, ctx.stop_event)
        self._connected.clear()

    async def stop(self) -> None:
        """Ask the running `start()` to return. Idempotent."""
        self.stops += 1
        if self._ctx is not None:
            self._ctx.stop_event.set()

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def wait_connected(self, timeout_s: float = 10.0) -> None:
        """Raises `TimeoutError` when the adapter did not connect within `timeout_s`."""
        await asyncio.wait_for(self._connected.wait(), timeout_s)

    # -- scripting -----------------------------------------------------------------------------

    def fail_next(
        self,
        kind: ErrorKind | str,
        count: int = 1,
        retry_after: float | None = None,
        *,
        op: Op | None = None,
    ) -> None:
        """Make the next `count` matching calls fail with `kind`.

        `op` limits it to one operation (send / edit / typing / media / delete); None matches
        whichever comes first. Kinds: `rate_limited` (with `retry_after`, default 1 s),
        `bad_format` (rejects formatted text only; a plain-text call succeeds and does not use
        it up), `timeout` (the message IS delivered or edited, but the call reports timeout),
        `forbidden`, `transient`, and any other `ErrorKind`.
        """
        self._failures.add(ErrorKind(kind), count, retry_after, op)

    def raise_on_start(self, exc: BaseException, *, times: int = 1) -> None:
        """The next `times` calls of `start()` raise `exc` before connecting."""
        self._start_errors.extend([exc] * times)

    def crash_after(self, n: int = 0, *, times: int = 1) -> None:
        """The next `times` runs raise `AdapterError` after `n` progress ticks once connected."""
        self._crash_plan.extend([n] * times)

    def stall(self) -> None:
        """Stop reporting progress for the current run (a restart clears it)."""
        self._stalled = True

    def hold_connect(self) -> None:
        """Make `start()` wait before calling `ctx.connected()` until `release_connect()`."""
        self._gate = asyncio.Event()

    def release_connect(self) -> None:
        if self._gate is not None:
            self._gate.set()
            self._gate = None

    # -- user side -----------------------------------------------------------------------------

    async def inject(
        self,
        text: str,
        *,
        chat_id: str = "c1",
        user_id: str = "u1",
        user_name: str | None = None,
        chat_type: ChatType | str = ChatType.DM,
        thread_id: str | None = None,
        mentions_bot: bool = False,
        reply_to: str | None = None,
        reply_to_bot: bool = False,
        attachments: Iterable[Attachment | str] = (),
        event_id: str | None = None,
        message_id: str | None = None,
        is_bot: bool = False,
        is_self: bool = False,
    ) -> Injected:
        """Deliver a user message through `ctx.emit` and return it with the "new" flag.

        Default event and message ids are unique across instances, so a re-created adapter
        never collides with durable dedup. Raises `RuntimeError` before `start()`.
        """
        ctx = self._ctx
        if ctx is None:
            raise RuntimeError("FakeAdapter.inject() before start()")
        self._seq += 1
        uid = uuid.uuid4().hex[:12]
        event = MessageEvent(
            platform=self.name,
            event_id=event_id or f"ev-{uid}",
            chat_id=chat_id,
            chat_type=ChatType(chat_type),
            thread_id=thread_id,
            user=UserRef(id=user_id, name=user_name, is_bot=is_bot, is_self=is_self),
            text=text,
            attachments=tuple(
                a if isinstance(a, Attachment) else Attachment(path=a) for a in attachments
            ),
            message_id=message_id or f"in-{uid}",
            reply_to=reply_to,
            reply_to_bot=reply_to_bot,
            mentions_bot=mentions_bot,
        )
        ctx.progress()
        new = await ctx.emit(event)
        self.inbox.append(event)
        await self._notify()
        return Injected(event, new)

    async def press(self, button: Button, *, message_id: str | None = None, chat_id: str = "c1",
                    user_id: str = "u1", chat_type: ChatType | str = ChatType.DM,
                    event_id: str | None = None) -> bool:
        """A user presses `button` under bot message `message_id`: delivered through
        `ctx.interact` like a platform's callback; returns the "new" flag."""
        ctx = self._ctx
        if ctx is None:
            raise RuntimeError("FakeAdapter.press() before start()")
        ctx.progress()
        return await ctx.interact(InteractionEvent(
            platform=self.name, event_id=event_id or f"press-{uuid.uuid4().hex[:12]}",
            chat_id=chat_id, chat_type=ChatType(chat_type), user=UserRef(id=user_id),
            action=button.action, value=button.value, message_id=message_id))

    # -- transcript ----------------------------------------------------------------------------

    def sent(self, chat_id: str | None = None) -> list[FakeMessage]:
        """Every bot message (text and media, deleted included), in send order."""
        return [m for m in self.outbox if chat_id is None or m.chat_id == chat_id]

    def messages(self, chat_id: str) -> list[str]:
        """The final visible text of each bot text message in `chat_id` (deleted ones omitted)."""
        return [m.text for m in self.sent(chat_id) if m.kind == "text" and not m.deleted]

    def message(self, chat_id: str, message_id: str) -> FakeMessage:
        """Raises `KeyError` for an unknown message."""
        for m in self.sent(chat_id):
            if m.message_id == message_id:
                return m
        raise KeyError(message_id)

    def history(self, chat_id: str, message_id: str) -> list[str]:
        """The text as sent, then after each applied edit."""
        return list(self.message(chat_id, message_id).history)

    def edits(self, chat_id: str, message_id: str) -> list[str]:
        """The texts of the applied edits of one message (the original send excluded)."""
        return self.history(chat_id, message_id)[1:]

    def media(self, chat_id: str) -> list[FakeMessage]:
        return [m for m in self.sent(chat_id) if m.kind == "media" and not m.deleted]

    def typing_count(self, chat_id: str) -> int:
        return sum(
            1 for c in self.calls if c.op == "typing" and c.chat_id == chat_id and c.result.ok
        )

    async def wait_for(self, predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
        """Wait until `predicate()` holds. It is checked after every change of this adapter and
        every 20 ms (so it may also look at state outside the adapter, e.g. a fake model's
        recorded requests). Raises `TimeoutError`."""
        async with asyncio.timeout(timeout_s):
            while not predicate():
                async with self._changed:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._changed.wait(), 0.02)

    async def wait_for_messages(
        self, chat_id: str, count: int, timeout_s: float = 10.0
    ) -> list[str]:
        """Wait until `chat_id` shows at least `count` bot text messages; return them."""
        await self.wait_for(lambda: len(self.messages(chat_id)) >= count, timeout_s)
        return self.messages(chat_id)

    async def wait_turns(self, count: int, timeout_s: float = 10.0) -> list[TurnCompleted]:
        await self.wait_for(lambda: len(self.turns_completed) >= count, timeout_s)
        return list(self.turns_completed)

    # -- platform operations (never raise) ----------------------------------------------------

    async def send(self, message: OutboundMessage) -> SendResult:
        fail = self._failures.take("send", formatted=message.formatted)
        if fail is None and self._too_long(message.text):
            fail = SendResult.failure(ErrorKind.TOO_LONG, "message is too long")
        if fail is not None and fail.error_kind is not ErrorKind.TIMEOUT:
            return await self._record(
                "send",
                message.chat_id,
                fail,
                text=message.text,
                formatted=message.formatted,
                thread_id=message.thread_id,
            )
        msg = self._new_message(
            message.chat_id,
            message.text,
            formatted=message.formatted,
            thread_id=message.thread_id,
            reply_to=message.reply_to,
            attachments=message.attachments,
        )
        msg.buttons = message.buttons
        result = fail or SendResult.success(msg.message_id)
        return await self._record(
            "send",
            message.chat_id,
            result,
            message_id=msg.message_id,
            text=message.text,
            formatted=message.formatted,
            thread_id=message.thread_id,
        )

    async def edit(
        self, chat_id: str, message_id: str, text: str, *, formatted: bool = True
    ) -> SendResult:
        result = await self._edit(chat_id, message_id, text, formatted)
        return await self._record(
            "edit", chat_id, result, message_id=message_id, text=text, formatted=formatted
        )

    async def typing(self, chat_id: str, thread_id: str | None = None) -> SendResult:
        if not self.capabilities.typing:
            result = await super().typing(chat_id, thread_id)
        else:
            result = self._failures.take("typing", formatted=False) or SendResult.success()
        return await self._record("typing", chat_id, result, thread_id=thread_id)

    async def delete(self, chat_id: str, message_id: str) -> SendResult:
        result: SendResult | None
        if not self.capabilities.delete:
            result = await super().delete(chat_id, message_id)
        else:
            result = self._failures.take("delete", formatted=False)
        if result is None:
            msg = self._find(chat_id, message_id)
            if msg is None or msg.deleted:
                result = SendResult.failure(ErrorKind.NOT_FOUND, "message not found")
            else:
                msg.deleted = True
                result = SendResult.success(message_id)
        return await self._record("delete", chat_id, result, message_id=message_id)

    async def send_media(
        self,
        chat_id: str,
        attachment: OutboundAttachment,
        *,
        thread_id: str | None = None,
        caption: str | None = None,
    ) -> SendResult:
        if not self.capabilities.media:
            result = await super().send_media(
                chat_id, attachment, thread_id=thread_id, caption=caption
            )
            return await self._record("media", chat_id, result, text=caption, thread_id=thread_id)
        fail = self._failures.take("media", formatted=caption is not None)
        if fail is not None and fail.error_kind is not ErrorKind.TIMEOUT:
            return await self._record("media", chat_id, fail, text=caption, thread_id=thread_id)
        msg = self._new_message(
            chat_id, caption or "", thread_id=thread_id, kind="media", attachments=(attachment,)
        )
        return await self._record(
            "media",
            chat_id,
            fail or SendResult.success(msg.message_id),
            message_id=msg.message_id,
            text=caption,
            thread_id=thread_id,
        )

    async def turn_complete(
        self, chat_id: str, *, reply_to: str | None, ok: bool, error: str | None = None
    ) -> None:
        self.turns_completed.append(TurnCompleted(chat_id, reply_to, ok, error))
        await self._notify()

    def commands_menu(self, commands: list[tuple[str, str]]) -> None:
        self.commands = list(commands)

    # -- internals -----------------------------------------------------------------------------

    async def _edit(self, chat_id: str, message_id: str, text: str, formatted: bool) -> SendResult:
        if not self.capabilities.edit:
            return await super().edit(chat_id, message_id, text, formatted=formatted)
        msg = self._find(chat_id, message_id)
        if msg is None or msg.deleted:
            return SendResult.failure(ErrorKind.NOT_FOUND, "message not found")
        fail = self._failures.take("edit", formatted=formatted)
        if fail is None and self._too_long(text):
            fail = SendResult.failure(ErrorKind.TOO_LONG, "message is too long")
        if fail is None and text == msg.text:
            fail = SendResult.failure(ErrorKind.NOT_MODIFIED, "message is not modified")
        if fail is not None and fail.error_kind is not ErrorKind.TIMEOUT:
            return fail
        msg.history.append(text)
        msg.formatted = formatted
        return fail or SendResult.success(message_id)

    def _too_long(self, text: str) -> bool:
        if self.capabilities.length_measure == "utf16":
            size = len(text.encode("utf-16-le")) // 2
        else:
            size = len(text)
        return size > self.capabilities.max_length

    def _find(self, chat_id: str, message_id: str) -> FakeMessage | None:
        for m in self.outbox:
            if m.chat_id == chat_id and m.message_id == message_id:
                return m
        return None

    def _new_message(
        self,
        chat_id: str,
        text: str,
        *,
        formatted: bool = True,
        thread_id: str | None = None,
        reply_to: str | None = None,
        kind: Literal["text", "media"] = "text",
        attachments: tuple[OutboundAttachment, ...] = (),
    ) -> FakeMessage:
        self._seq += 1
        msg = FakeMessage(
            f"m{self._seq}", chat_id, [text], formatted, thread_id, reply_to, kind, attachments
        )
        self.outbox.append(msg)
        return msg

    async def _record(
        self,
        op: Op,
        chat_id: str,
        result: SendResult,
        *,
        message_id: str | None = None,
        text: str | None = None,
        formatted: bool = True,
        thread_id: str | None = None,
    ) -> SendResult:
        self.calls.append(FakeCall(op, chat_id, result, message_id, text, formatted, thread_id))
        await self._notify()
        return result

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

