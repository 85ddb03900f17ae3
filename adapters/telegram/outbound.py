"""Outbound Bot API calls (send, edit, typing, delete, media) mapped to `SendResult`s.

Sending uses its own `Bot` (and HTTP pool), independent of the polling transport, so replies
keep flowing while the poller is rebuilt after a failure.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import structlog
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.request import HTTPXRequest

from adapters.telegram.convert import button_data
from adapters.telegram.errors import classify
from adapters.telegram.settings import TelegramSettings
from gateway.events import Button, ErrorKind, OutboundAttachment, OutboundMessage, SendResult
from gateway.ports import attachment_bytes
from hermes_common.text import utf16_length

__all__ = ["GENERAL_TOPIC_ID", "Outbound", "build_bot", "close_requests", "thread_param"]

GENERAL_TOPIC_ID = "1"
CAPTION_LIMIT = 1024
PHOTO_LIMIT = 10 * 1024 * 1024
_IMAGE = {".jpg", ".jpeg", ".png", ".webp"}
_VIDEO = {".mp4", ".mov", ".m4v"}
_AUDIO = {".mp3", ".m4a", ".flac", ".wav"}

T = TypeVar("T")
_log = structlog.get_logger("adapters.telegram")


def build_bot(settings: TelegramSettings, *, pool: int = 8) -> tuple[Bot, list[HTTPXRequest]]:
    """A `Bot` pointed at `settings.base_url` / `base_file_url` (token appended), with a
    general request pool and a separate one for getUpdates. The caller shuts the requests down."""
    t = settings.request_timeout_s
    general = HTTPXRequest(connection_pool_size=pool, read_timeout=t, write_timeout=t,
                           connect_timeout=10.0, pool_timeout=5.0, media_write_timeout=60.0)
    updates = HTTPXRequest(connection_pool_size=1, read_timeout=10.0, write_timeout=10.0,
                           connect_timeout=10.0, pool_timeout=5.0)
    bot = Bot(settings.plain_token(), base_url=settings.base_url,
              base_file_url=settings.base_file_url,
              request=general, get_updates_request=updates)
    return bot, [general, updates]


async def close_requests(requests: list[HTTPXRequest]) -> None:
    """Shut the HTTP pools of `build_bot` down. Best effort: a pool that fails to close is
    logged and the others are still closed. Must not raise."""
    for req in requests:
        try:
            await req.shutdown()
        except Exception as exc:
            _log.warning("telegram_pool_close_failed", error=type(exc).__name__)


def thread_param(thread_id: str | None) -> int | None:
    """`message_thread_id` for a send: None for no thread and for the General topic (id 1),
    which Telegram rejects as a thread id."""
    if not thread_id or thread_id == GENERAL_TOPIC_ID:
        return None
    try:
        return int(thread_id)
    except ValueError:
        return None


def _reply_param(reply_to: str | None) -> ReplyParameters | None:
    if not reply_to:
        return None
    try:
        return ReplyParameters(message_id=int(reply_to), allow_sending_without_reply=True)
    except ValueError:
        return None


def _parse_mode(formatted: bool) -> str | None:
    return ParseMode.HTML if formatted else None


def _caption(caption: str | None) -> str | None:
    if not caption:
        return None
    while utf16_length(caption) > CAPTION_LIMIT:
        caption = caption[: max(len(caption) - 64, 0)]
    return caption or None


class Outbound:
    """Platform calls for one adapter. Every method returns a `SendResult` and never raises."""

    def __init__(self, settings: TelegramSettings) -> None:
        self._s = settings
        self._bot: Bot | None = None
        self._requests: list[HTTPXRequest] = []

    def _sender(self) -> Bot:
        if self._bot is None:
            self._bot, self._requests = build_bot(self._s)
        return self._bot

    async def close(self) -> None:
        """Close the HTTP pool (idempotent); the next call opens a fresh one."""
        requests, self._requests, self._bot = self._requests, [], None
        await close_requests(requests)

    async def _call(self, fn: Callable[[Bot], Awaitable[T]]) -> T | SendResult:
        try:
            return await fn(self._sender())
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return classify(exc, secret=self._s.plain_token())

    async def send(self, message: OutboundMessage) -> SendResult:
        """Text (with its buttons as an inline keyboard), then each attachment."""
        ids: list[str] = []
        if message.text.strip():
            sent = await self._call(lambda bot: bot.send_message(
                chat_id=message.chat_id, text=message.text,
                parse_mode=_parse_mode(message.formatted),
                message_thread_id=thread_param(message.thread_id),
                reply_parameters=_reply_param(message.reply_to),
                reply_markup=_keyboard(message.buttons)))
            if isinstance(sent, SendResult):
                return sent
            ids.append(str(sent.message_id))
        for att in message.attachments:
            res = await self.send_media(message.chat_id, att, thread_id=message.thread_id,
                                        caption=None)
            if not res.ok:
                return res if not ids else SendResult(
                    ok=False, message_ids=tuple(ids), error_kind=res.error_kind,
                    error=res.error, retry_after=res.retry_after)
            ids.extend(res.message_ids)
        if not ids:
            return SendResult.failure(ErrorKind.UNKNOWN, "empty message: no text, no attachment")
        return SendResult.success(*ids)

    async def edit(self, chat_id: str, message_id: str, text: str, *, formatted: bool) -> SendResult:
        try:
            mid = int(message_id)
        except ValueError:
            return SendResult.failure(ErrorKind.NOT_FOUND, "not a Telegram message id")
        res = await self._call(lambda bot: bot.edit_message_text(
            text=text, chat_id=chat_id, message_id=mid, parse_mode=_parse_mode(formatted)))
        return res if isinstance(res, SendResult) else SendResult.success(message_id)

    async def typing(self, chat_id: str, thread_id: str | None) -> SendResult:
        res = await self._call(lambda bot: bot.send_chat_action(
            chat_id=chat_id, action=ChatAction.TYPING, message_thread_id=thread_param(thread_id)))
        return res if isinstance(res, SendResult) else SendResult.success()

    async def delete(self, chat_id: str, message_id: str) -> SendResult:
        try:
            mid = int(message_id)
        except ValueError:
            return SendResult.failure(ErrorKind.NOT_FOUND, "not a Telegram message id")
        res = await self._call(lambda bot: bot.delete_message(chat_id=chat_id, message_id=mid))
        return res if isinstance(res, SendResult) else SendResult.success(message_id)

    async def send_media(self, chat_id: str, attachment: OutboundAttachment, *,
                         thread_id: str | None, caption: str | None) -> SendResult:
        path = Path(attachment.path)
        try:
            data = await attachment_bytes(attachment)
        except OSError as exc:
            return SendResult.failure(ErrorKind.UNKNOWN, f"cannot read {path.name}: {exc.strerror}")
        method = self._method_for(attachment, path, len(data))
        kwargs: dict[str, Any] = {
            "chat_id": chat_id, method: data, "filename": path.name,
            "caption": _caption(caption), "message_thread_id": thread_param(thread_id)}
        sent = await self._call(lambda bot: getattr(bot, f"send_{method}")(**kwargs))
        if isinstance(sent, SendResult):
            return sent
        return SendResult.success(str(sent.message_id))

    @staticmethod
    def _method_for(att: OutboundAttachment, path: Path, size: int) -> str:
        suffix = path.suffix.lower()
        if att.as_voice:
            return "voice"
        if att.as_document:
            return "document"
        if suffix in _IMAGE and size <= PHOTO_LIMIT:
            return "photo"
        if suffix in _VIDEO:
            return "video"
        if suffix in _AUDIO:
            return "audio"
        return "document"


def _keyboard(buttons: tuple[Button, ...]) -> InlineKeyboardMarkup | None:
    """One row of inline buttons; a press comes back as a `callback_query`."""
    if not buttons:
        return None
    return InlineKeyboardMarkup([[InlineKeyboardButton(b.label[:64],
                                                       callback_data=button_data(b.action,
                                                                                 b.value))
                                  for b in buttons]])
