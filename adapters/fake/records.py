"""What the fake platform saw: bot messages, calls, completed turns, and scripted failures."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from gateway.events import Button, ErrorKind, OutboundAttachment, SendResult

__all__ = ["FailureScript", "FakeCall", "FakeMessage", "Op", "TurnCompleted"]

Op = Literal["send", "edit", "typing", "media", "delete"]


@dataclass(slots=True)
class FakeMessage:
    """One message the bot posted. `history[0]` is the text as sent; each edit appends."""

    message_id: str
    chat_id: str
    history: list[str]
    formatted: bool = True
    thread_id: str | None = None
    reply_to: str | None = None
    kind: Literal["text", "media"] = "text"
    attachments: tuple[OutboundAttachment, ...] = ()
    deleted: bool = False
    buttons: tuple[Button, ...] = ()

    @property
    def text(self) -> str:
        return self.history[-1]


@dataclass(frozen=True, slots=True)
class FakeCall:
    """One call the gateway made (successful or not), in call order."""

    op: Op
    chat_id: str
    result: SendResult
    message_id: str | None = None
    text: str | None = None
    formatted: bool = True
    thread_id: str | None = None


@dataclass(frozen=True, slots=True)
class TurnCompleted:
    chat_id: str
    reply_to: str | None
    ok: bool
    error: str | None


@dataclass(slots=True)
class _Scripted:
    kind: ErrorKind
    remaining: int
    retry_after: float | None
    op: Op | None


@dataclass(slots=True)
class FailureScript:
    """A FIFO of scripted failures; each entry matches one op (or any op when `op` is None)."""

    _queue: deque[_Scripted] = field(default_factory=deque)

    def add(self, kind: ErrorKind, count: int, retry_after: float | None, op: Op | None) -> None:
        if count > 0:
            self._queue.append(_Scripted(kind, count, retry_after, op))

    def clear(self) -> None:
        self._queue.clear()

    def take(self, op: Op, *, formatted: bool) -> SendResult | None:
        """The failure the next `op` call must report, consuming one use; None to succeed.

        `bad_format` only hits formatted text (send, edit); plain text passes it by untouched.
        """
        for entry in self._queue:
            if entry.op is not None and entry.op != op:
                continue
            if entry.kind is ErrorKind.BAD_FORMAT and (not formatted or op not in ("send", "edit")):
                continue
            entry.remaining -= 1
            if entry.remaining <= 0:
                self._queue.remove(entry)
            retry_after = entry.retry_after
            if entry.kind is ErrorKind.RATE_LIMITED and retry_after is None:
                retry_after = 1.0
            return SendResult.failure(
                entry.kind, f"scripted {entry.kind.value}", retry_after=retry_after
            )
        return None
