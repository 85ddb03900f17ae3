"""`TelegramAdapter`: python-telegram-bot's `Bot` driven by our own poll loop or webhook.

Fetching is separate from processing: the adapter only turns updates into `MessageEvent`s,
awaits `ctx.emit` (durable) and then confirms the update; the gateway does the rest.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

from telegram import Bot, BotCommand, Update
from telegram import error as tg_error

from adapters.telegram.convert import (
    BotIdentity,
    files_of,
    inbound_message,
    to_event,
    to_interaction,
)
from adapters.telegram.errors import error_text
from adapters.telegram.media import download_all
from adapters.telegram.outbound import Outbound, build_bot, close_requests
from adapters.telegram.polling import ALLOWED_UPDATES, Poller
from adapters.telegram.settings import TelegramSettings
from adapters.telegram.webhook import WebhookServer
from gateway.events import (
    Attachment,
    OutboundAttachment,
    OutboundMessage,
    SendResult,
    SkippedFile,
)
from gateway.ports import (
    AdapterAuthError,
    AdapterContext,
    AdapterError,
    BasePlatformAdapter,
    BudgetSpec,
    Capabilities,
    DownloadBudget,
    Identity,
    RateProfile,
    RateWindow,
)
from hermes_common.hosts import HostAllowList
from hermes_common.settings import reveal
from hermes_common.waits import relay

__all__ = ["RATE_PROFILE", "TelegramAdapter"]

RATE_PROFILE = RateProfile(
    per_chat=BudgetSpec((RateWindow(1, 1.0), RateWindow(20, 60.0))),  # groups: 20 a minute
    by_chat_type=(("dm", BudgetSpec((RateWindow(1, 1.0),))),),
)
"""Telegram's limits per chat: about one message a second, and 20 a minute in a group."""

_COMMAND_NAME = re.compile(r"^[a-z0-9_]{1,32}$")
_MAX_COMMANDS = 100


class TelegramAdapter(BasePlatformAdapter):
    """One Telegram bot. Long polling by default, webhook when `mode: webhook`.

    `start(ctx)` raises `AdapterAuthError` when the token is missing or refused (getMe 401) or
    webhook mode lacks a secret, and `AdapterError` for transport failures (repeated 409
    Conflicts, repeated network errors, a failed `emit`). Sends never raise.
    """

    format_hint = ("You are chatting on Telegram. Keep replies concise and readable on a phone; "
                   "Markdown is converted to Telegram formatting for you.")

    settings: TelegramSettings

    def __init__(
        self, name: str, settings: TelegramSettings | Mapping[str, Any] | None = None
    ) -> None:
        """Raises `pydantic.ValidationError` for invalid settings (a mapping is validated)."""
        self.name = name
        self.settings = TelegramSettings.coerce(settings)
        #: The token rides in file download URLs: only the configured file server gets it.
        self._file_hosts = HostAllowList.of(origins=[self.settings.base_file_url])
        polling = self.settings.mode == "polling"
        self.capabilities = Capabilities(
            edit=True, typing=True, threads=True, media=True, delete=True,
            max_length=4096, length_measure="utf16", dialect="telegram_html",
            rate_profile=RATE_PROFILE,
            liveness_window_s=max(self.settings.poll_timeout_s + 30.0, 40.0) if polling else 0.0,
        )
        self.me: BotIdentity | None = None
        self.webhook_port: int | None = None
        self._commands: list[tuple[str, str]] = []
        self._outbound = Outbound(self.settings)
        self._stop: asyncio.Event | None = None

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self, ctx: AdapterContext) -> None:
        if not self.settings.plain_token():
            raise AdapterAuthError("platforms.telegram.token is not set")
        if self.settings.mode == "webhook" and not reveal(self.settings.webhook.secret_token):
            raise AdapterAuthError("webhook mode needs platforms.telegram.webhook.secret_token")
        stop = self._stop = asyncio.Event()
        relay_task = asyncio.create_task(relay(ctx.stop_event, stop),
                                         name=f"adapter:{self.name}:stop-relay")
        bot, requests = build_bot(self.settings, pool=4)
        try:
            self.me = await self._connect(bot)
            self.identity = Identity(id=str(self.me.id), username=self.me.username or None)
            await self._publish_commands(bot, ctx)
            if self.settings.mode == "webhook":
                await self._run_webhook(bot, ctx, stop)
            else:
                await self._run_polling(bot, ctx, stop)
        finally:
            relay_task.cancel()
            await close_requests(requests)

    async def stop(self) -> None:
        """Idempotent: ends `start()` (in-flight long poll cancelled) and closes the send pool."""
        if self._stop is not None:
            self._stop.set()
        await self._outbound.close()

    async def _connect(self, bot: Bot) -> BotIdentity:
        try:
            me = await bot.get_me()
        except tg_error.InvalidToken as exc:
            raise AdapterAuthError(
                "Telegram refused the bot token (getMe answered 401/404; "
                "check the token and platforms.telegram.base_url)") from exc
        except tg_error.TelegramError as exc:
            why = error_text(exc, self.settings.plain_token())
            raise AdapterError(f"telegram: getMe failed ({why})") from exc
        return BotIdentity(id=me.id, username=me.username or "")

    async def _publish_commands(self, bot: Bot, ctx: AdapterContext) -> None:
        if not self._commands:
            return
        menu = [BotCommand(name, help_) for name, help_ in self._commands]
        try:
            await bot.set_my_commands(menu)
        except tg_error.TelegramError as exc:
            ctx.logger.warning("telegram_set_my_commands_failed",
                               error=error_text(exc, self.settings.plain_token()))

    async def _run_polling(self, bot: Bot, ctx: AdapterContext, stop: asyncio.Event) -> None:
        try:
            await bot.delete_webhook(drop_pending_updates=False)
        except tg_error.TelegramError as exc:
            why = error_text(exc, self.settings.plain_token())
            raise AdapterError(f"telegram: deleteWebhook failed ({why})") from exc
        ctx.connected()

        async def handle(update: Update) -> None:
            await self._handle(bot, ctx, update)

        await Poller(bot, self.settings, ctx, handle, stop).run()

    async def _run_webhook(self, bot: Bot, ctx: AdapterContext, stop: asyncio.Event) -> None:
        async def on_update(data: dict[str, Any]) -> None:
            ctx.progress()
            try:
                update = Update.de_json(data, bot)
            except Exception as exc:
                ctx.logger.warning("telegram_update_unparseable", source="webhook",
                                   error=type(exc).__name__)
                return
            await self._handle(bot, ctx, update)

        server = WebhookServer(self.settings.webhook, on_update, ctx.logger)
        try:
            try:
                self.webhook_port = await server.start()
            except OSError as exc:
                raise AdapterError(f"telegram webhook: cannot listen ({exc.strerror})") from exc
            wh = self.settings.webhook
            url = wh.url or f"http://{wh.host}:{self.webhook_port}{wh.path}"
            try:
                await bot.set_webhook(url=url, secret_token=reveal(wh.secret_token),
                                      allowed_updates=ALLOWED_UPDATES)
            except tg_error.InvalidToken as exc:
                raise AdapterAuthError("Telegram refused the bot token (setWebhook)") from exc
            except tg_error.TelegramError as exc:
                why = error_text(exc, self.settings.plain_token())
                raise AdapterError(f"telegram: setWebhook failed ({why})") from exc
            ctx.connected()
            await stop.wait()
        finally:
            await server.stop()

    async def _handle(self, bot: Bot, ctx: AdapterContext, update: Update) -> None:
        """Convert and emit one update. Unusable updates are logged and skipped; a failing
        `emit` propagates (the update must not be confirmed)."""
        assert self.me is not None
        if update.callback_query is not None:
            await self._handle_press(bot, ctx, update)
            return
        message = inbound_message(update)
        if message is None:
            return
        try:
            refs = files_of(message)
            attachments: tuple[Attachment, ...] = ()
            skipped: tuple[SkippedFile, ...] = ()
            if refs:
                budget = DownloadBudget(
                    min(ctx.max_attachment_bytes, self.settings.max_download_bytes),
                    ctx.max_message_bytes)
                prefix = f"tg-{message.chat.id}-{message.message_id}"
                attachments, skipped = await download_all(
                    bot, refs, ctx.cache_dir / "telegram", prefix=prefix, budget=budget,
                    allowed=self._file_hosts, timeout_s=ctx.download_timeout_s,
                    logger=ctx.logger)
            event = to_event(self.name, update, message, self.me,
                             attachments=attachments, skipped=skipped)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            ctx.logger.warning("telegram_update_unconvertible", update_id=update.update_id,
                               error=type(exc).__name__)
            return
        await ctx.emit(event)

    async def _handle_press(self, bot: Bot, ctx: AdapterContext, update: Update) -> None:
        """A button press: handed to the gateway (durably, like a message), then answered
        so the client stops its spinner (best effort)."""
        assert self.me is not None and update.callback_query is not None
        event = to_interaction(self.name, update, self.me)
        if event is not None:
            await ctx.interact(event)
        try:
            await bot.answer_callback_query(update.callback_query.id)
        except tg_error.TelegramError as exc:
            ctx.logger.info("telegram_callback_answer_failed", error=type(exc).__name__)


    # -- sending ---------------------------------------------------------------------------
    async def send(self, message: OutboundMessage) -> SendResult:
        return await self._outbound.send(message)

    async def edit(
        self, chat_id: str, message_id: str, text: str, *, formatted: bool = True
    ) -> SendResult:
        return await self._outbound.edit(chat_id, message_id, text, formatted=formatted)

    async def typing(self, chat_id: str, thread_id: str | None = None) -> SendResult:
        return await self._outbound.typing(chat_id, thread_id)

    async def delete(self, chat_id: str, message_id: str) -> SendResult:
        return await self._outbound.delete(chat_id, message_id)

    async def send_media(
        self,
        chat_id: str,
        attachment: OutboundAttachment,
        *,
        thread_id: str | None = None,
        caption: str | None = None,
    ) -> SendResult:
        return await self._outbound.send_media(chat_id, attachment, thread_id=thread_id,
                                               caption=caption)

    def commands_menu(self, commands: list[tuple[str, str]]) -> None:
        """Keep the registry's commands for the bot menu (published by setMyCommands at each
        start). Names Telegram would refuse are left out. Must not raise."""
        menu: list[tuple[str, str]] = []
        for name, help_ in commands:
            key = str(name).lstrip("/").lower()
            if _COMMAND_NAME.match(key) and key not in {n for n, _ in menu}:
                menu.append((key, (str(help_).strip() or key)[:256]))
        self._commands = menu[:_MAX_COMMANDS]
