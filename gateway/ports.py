"""The contract between the gateway and a platform adapter.

An adapter implements `BasePlatformAdapter`: a small required core (`start`, `stop`, `send`)
and optional capabilities it declares in `Capabilities`. The gateway never branches on a
platform name; it reads capabilities. Adapters are found through the `hermes.adapters`
entry-point group: each entry point names a factory `(name, settings) -> adapter`.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gateway.events import ErrorKind, MessageEvent, OutboundAttachment, OutboundMessage, SendResult

__all__ = [
    "AdapterAuthError",
    "AdapterContext",
    "AdapterError",
    "AdapterFatalError",
    "BasePlatformAdapter",
    "Capabilities",
    "CursorStore",
]

Dialect = Literal[
    "markdown", "telegram_html", "telegram_markdown_v2", "slack_mrkdwn", "discord", "plain"
]


class AdapterError(Exception):
    """A transport failure; the supervisor restarts the adapter with backoff."""


class AdapterFatalError(AdapterError):
    """A failure a restart cannot fix (refused credentials, an address another program
    holds). The adapter is not restarted; when every adapter fails so at start, exit 78."""


class AdapterAuthError(AdapterFatalError):
    """Credentials were refused. Fatal for this adapter: it is not restarted."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a platform can do. Delivery adapts to these; absent features degrade explicitly."""

    edit: bool = False
    typing: bool = False
    reactions: bool = False
    threads: bool = False
    media: bool = False
    delete: bool = False
    max_length: int = 4000
    length_measure: Literal["chars", "utf16"] = "chars"
    dialect: Dialect = "markdown"
    rate_profile: str = "default"
    #: Seconds without progress after which the supervisor restarts the adapter (0 = never).
    liveness_window_s: float = 0.0
    #: The adapter authenticates its users itself (e.g. the HTTP API's bearer keys), so the
    #: gateway's allow-lists and pairing do not apply to it.
    trusted_auth: bool = False
    #: The platform can deliver a message nobody is waiting for (a chat). A request/response
    #: API cannot, so turns a restart interrupted are not re-run for it (nobody would get
    #: the answer; the model call would be wasted).
    push: bool = True


class CursorStore:
    """Durable per-adapter cursors (e.g. a Telegram update offset)."""

    async def get(self, name: str) -> str | None:  # pragma: no cover - interface
        raise NotImplementedError

    async def set(self, name: str, value: str) -> None:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(slots=True)
class AdapterContext:
    """Given to `start()`.

    `emit(event)` returns once the event is durably recorded (or recognized as a duplicate):
    only then may an adapter acknowledge or advance its cursor. It returns True when the event
    was new. `progress()` reports liveness (a successful poll or a received frame).
    """

    name: str
    emit: Callable[[MessageEvent], Awaitable[bool]]
    progress: Callable[[], None]
    stop_event: asyncio.Event
    cursors: CursorStore
    cache_dir: Path
    logger: Any
    connected: Callable[[], None] = field(default=lambda: None)
    max_attachment_bytes: int = 25 * 1024 * 1024


class BasePlatformAdapter(abc.ABC):
    """One platform connection.

    `start(ctx)` connects and then runs until `ctx.stop_event` is set or the transport fails
    (raise `AdapterError`, or `AdapterAuthError` for refused credentials); it calls
    `ctx.connected()` once ready. `stop()` is idempotent. `send` and the optional methods
    return a `SendResult` and must not raise for platform errors.
    """

    name: str = "base"
    capabilities: Capabilities = Capabilities()

    @abc.abstractmethod
    async def start(self, ctx: AdapterContext) -> None: ...

    @abc.abstractmethod
    async def stop(self) -> None: ...

    @abc.abstractmethod
    async def send(self, message: OutboundMessage) -> SendResult: ...

    async def edit(
        self, chat_id: str, message_id: str, text: str, *, formatted: bool = True
    ) -> SendResult:
        return SendResult.failure(ErrorKind.UNKNOWN, "edit not supported")

    async def typing(self, chat_id: str, thread_id: str | None = None) -> SendResult:
        return SendResult.failure(ErrorKind.UNKNOWN, "typing not supported")

    async def delete(self, chat_id: str, message_id: str) -> SendResult:
        return SendResult.failure(ErrorKind.UNKNOWN, "delete not supported")

    async def send_media(
        self,
        chat_id: str,
        attachment: OutboundAttachment,
        *,
        thread_id: str | None = None,
        caption: str | None = None,
    ) -> SendResult:
        return SendResult.failure(ErrorKind.UNKNOWN, "media not supported")

    async def turn_complete(  # noqa: B027 - optional hook
        self, chat_id: str, *, reply_to: str | None, ok: bool, error: str | None = None
    ) -> None:
        """Called once the gateway finished answering the event `reply_to` (reply, command
        answer, refusal or error). Request/response transports (the HTTP API) close the
        request here; chat platforms ignore it. Must not raise."""

    def commands_menu(self, commands: list[tuple[str, str]]) -> None:  # noqa: B027 - optional
        """Receive the command registry's (name, help) pairs, e.g. for a bot menu."""
