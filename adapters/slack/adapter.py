"""`SlackAdapter`: slack-bolt (async) over Socket Mode or the HTTP Events API."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import structlog
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.delivered import find_delivered, reply_metadata
from adapters.slack.errors import AUTH_ERRORS, api_error_code, failure_for
from adapters.slack.files import FileFetcher, upload_file
from adapters.slack.interactive import button_blocks, interaction_of
from adapters.slack.normalize import BotIdentity, chat_type_for, event_identity, normalize
from adapters.slack.settings import SlackSettings
from adapters.slack.transport import give_up_after, run_http, run_socket
from gateway.events import (
    ChatType,
    ErrorKind,
    MessageEvent,
    OutboundAttachment,
    OutboundMessage,
    SendResult,
    UserRef,
)
from gateway.ports import (
    AdapterAuthError,
    AdapterContext,
    AdapterError,
    BasePlatformAdapter,
    Capabilities,
    DeliveryRef,
    Identity,
    RateProfile,
    attachment_bytes,
)
from hermes_common.waits import relay

__all__ = ["MAX_LENGTH", "SlackAdapter"]

#: Slack recommends at most 4,000 characters in `text` (longer ones get truncated or folded
#: behind "Show more"); parts are cut a little below that.
MAX_LENGTH = 3900
_THREADS_CURSOR = "bot_threads"
_THREADS_PERSISTED = 500
_BOLT_LOG = logging.getLogger("adapters.slack.bolt")
_log = structlog.get_logger("adapters.slack")
_PLAIN = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


_V = TypeVar("_V")


class _Lru(OrderedDict[str, _V]):
    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap = cap

    def put(self, key: str, value: _V) -> bool:
        """Insert or refresh; True when the key was new."""
        new = key not in self
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.cap:
            self.popitem(last=False)
        return new


class SlackAdapter(BasePlatformAdapter):
    """One Slack workspace through a bot token.

    Inbound: `message` and `app_mention` events become `MessageEvent`s (normalize.py states the
    rules); the envelope or HTTP request is acknowledged only after `ctx.emit` returned.
    Outbound: `chat.postMessage` / `chat.update` / `chat.delete` and the v2 file upload; every
    platform error comes back as a `SendResult`, never raised.
    """

    format_hint = (
        "You are chatting on Slack. Keep replies concise and scannable; Markdown is converted "
        "to Slack mrkdwn for you (tables are not supported, prefer lists)."
    )

    settings: SlackSettings

    def __init__(
        self, name: str = "slack", settings: SlackSettings | Mapping[str, Any] | None = None
    ) -> None:
        """Raises `pydantic.ValidationError` for invalid settings (a mapping is validated)."""
        self.name = name
        self.settings = SlackSettings.coerce(settings)
        socket = self.settings.mode == "socket"
        self.capabilities = Capabilities(
            edit=True, typing=False, threads=True, media=True, delete=True,
            max_length=MAX_LENGTH, length_measure="chars", dialect="slack_mrkdwn",
            rate_profile=RateProfile(),  # about one message a second per channel
            liveness_window_s=give_up_after(self.settings) + 10.0 if socket else 0.0,
            exclusive_intake=socket,
        )
        #: The Events API URL once listening (HTTP mode).
        self.http_url: str | None = None
        self._web: AsyncWebClient | None = None
        self._identity: BotIdentity | None = None
        self._ctx: AdapterContext | None = None
        self._stop: asyncio.Event | None = None
        self._fetcher: FileFetcher | None = None
        self._commands: frozenset[str] = frozenset()
        self._bot_threads: _Lru[None] = _Lru(5000)
        self._chat_types: _Lru[ChatType] = _Lru(10000)
        self._user_names: _Lru[str | None] = _Lru(2000)
        self._recent: _Lru[None] = _Lru(5000)
        self._locks: dict[str, asyncio.Lock] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, ctx: AdapterContext) -> None:
        """Check the tokens (`AdapterAuthError` when Slack refuses them), connect, and run until
        `ctx.stop_event` or `stop()`; raises `AdapterError` when the transport fails."""
        s, secrets = self.settings, self.settings.plain()
        if not secrets.bot_token:
            raise AdapterAuthError("platforms.slack.bot_token is not set")
        if s.mode == "socket" and not secrets.app_token:
            raise AdapterAuthError("platforms.slack.app_token is required in socket mode")
        if s.mode == "http" and not secrets.signing_secret:
            raise AdapterAuthError("platforms.slack.signing_secret is required in http mode")
        stop = asyncio.Event()
        self._stop, self._ctx = stop, ctx
        web = AsyncWebClient(token=secrets.bot_token, base_url=s.api_base_url,
                             timeout=s.timeout_s)  # type: ignore[arg-type]  # typed int, used as aiohttp's float total
        self._identity, username = await self._auth_test(web)
        self.identity = Identity(id=self._identity.user_id, username=username or None)
        self._web = web
        self._fetcher = FileFetcher(secrets.bot_token, s.api_base_url)
        await self._load_threads(ctx)
        app = self._build_app(web)
        link = asyncio.create_task(relay(ctx.stop_event, stop),
                                   name=f"adapter:{self.name}:stop-relay")
        try:
            if s.mode == "socket" and not ctx.intake:  # another replica holds the socket
                ctx.connected()
                await stop.wait()
            elif s.mode == "socket":
                await run_socket(app, web, s, ctx, stop)
            else:
                await run_http(app, s, ctx, stop, self._bound)
        finally:
            link.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await link

    async def stop(self) -> None:
        """Ask the running `start()` to return. Idempotent."""
        if self._stop is not None:
            self._stop.set()

    def commands_menu(self, commands: list[tuple[str, str]]) -> None:
        """Remember command names so `!name` is read as `/name` (Slack's client reserves `/`)."""
        self._commands = frozenset(name.lstrip("/").lower() for name, _ in commands)

    def _bound(self, url: str) -> None:
        self.http_url = url

    async def _auth_test(self, web: AsyncWebClient) -> tuple[BotIdentity, str]:
        try:
            resp = await web.auth_test()
        except SlackApiError as exc:
            code = api_error_code(exc)
            if code in AUTH_ERRORS:
                raise AdapterAuthError(f"slack refused the bot token ({code})") from None
            raise AdapterError(f"auth.test failed ({code or 'error'})") from None
        except Exception as exc:  # noqa: BLE001 - any transport failure is an AdapterError
            raise AdapterError(f"auth.test failed ({type(exc).__name__})") from None
        return (BotIdentity(user_id=str(resp.get("user_id") or ""),
                            bot_id=str(resp.get("bot_id") or ""),
                            team_id=str(resp.get("team_id") or "")),
                str(resp.get("user") or ""))

    def _build_app(self, web: AsyncWebClient) -> AsyncApp:
        # Bolt's single-workspace authorization calls auth.test on the first event it sees;
        # when that call failed (a Slack 5xx), bolt acknowledged the envelope with an error
        # text and the message was gone (chaos seed 2025). The bot's identity is known from
        # our own auth.test at start, so bolt authorizes from it without a call; bolt's
        # client carries no token of its own (the listeners use ours).
        identity, token = self._identity, web.token

        async def authorize(enterprise_id: str | None, team_id: str | None,
                            user_id: str | None) -> AuthorizeResult:
            assert identity is not None
            return AuthorizeResult(enterprise_id=enterprise_id,
                                   team_id=team_id or identity.team_id or None,
                                   bot_user_id=identity.user_id or None,
                                   bot_id=identity.bot_id or None, bot_token=token,
                                   user_id=user_id)

        bolt_client = AsyncWebClient(base_url=web.base_url, timeout=web.timeout)
        app = AsyncApp(client=bolt_client, authorize=authorize,
                       signing_secret=self.settings.plain().signing_secret,
                       process_before_response=True, logger=_BOLT_LOG)

        async def on_message(event: dict[str, Any]) -> None:
            await self._on_event(event, mention=False)

        async def on_mention(event: dict[str, Any]) -> None:
            await self._on_event(event, mention=True)

        async def ignore() -> None:
            return None

        async def on_action(ack: Any, body: dict[str, Any]) -> None:
            await self._on_action(body)
            await ack()

        app.event("message")(on_message)
        app.event("app_mention")(on_mention)
        app.action(re.compile(".+"))(on_action)
        app.event(re.compile(".+"))(ignore)  # acknowledge every other event type
        return app

    # -- inbound -------------------------------------------------------------------------------

    async def _on_event(self, event: Mapping[str, Any], *, mention: bool) -> None:
        """Emit one event (once per message identity). Raises when `ctx.emit` fails, so the
        envelope is not acknowledged and Slack delivers it again."""
        ctx, ident = self._ctx, self._identity
        channel, ts = event.get("channel"), event.get("ts")
        if ctx is None or ident is None or not isinstance(channel, str) or not isinstance(ts, str):
            return
        key = event_identity(channel, ts)
        if key in self._recent:
            return
        lock = self._locks.setdefault(key, asyncio.Lock())
        try:
            async with lock:
                if key in self._recent:
                    return
                ev = await self._build_event(event, ident, mention=mention)
                if ev is None:
                    return
                await ctx.emit(ev)
                self._recent.put(key, None)
        finally:
            if not lock.locked():
                self._locks.pop(key, None)

    async def _on_action(self, body: Mapping[str, Any]) -> None:
        """A button press (`block_actions`) on one of the bot's messages: handed to the
        gateway before it is acknowledged. Presses that are not ours are ignored."""
        ctx, ident = self._ctx, self._identity
        if ctx is None or ident is None:
            return
        ev = interaction_of(self.name, body)
        if ev is None:
            return
        chat_type = await self._chat_type({"channel": ev.chat_id})
        await ctx.interact(ev.model_copy(update={"chat_type": chat_type}))

    async def _build_event(self, event: Mapping[str, Any], ident: BotIdentity, *,
                           mention: bool) -> MessageEvent | None:
        channel = str(event.get("channel"))
        thread_ts = event.get("thread_ts")
        ev = normalize(
            self.name, event, identity=ident, chat_type=await self._chat_type(event),
            mention_event=mention,
            bot_in_thread=f"{channel}:{thread_ts}" in self._bot_threads,
            commands=self._commands,
        )
        if ev is None:
            return None
        update: dict[str, Any] = {}
        if not ev.user.is_bot:
            name = await self._user_name(ev.user.id)
            if name:
                update["user"] = UserRef(id=ev.user.id, name=name)
        files = [f for f in event.get("files") or () if isinstance(f, Mapping)]
        if files and self._fetcher is not None and self._ctx is not None:
            update["attachments"], update["skipped"] = await self._fetcher.fetch_all(
                files, Path(self._ctx.cache_dir), self._ctx.download_budget(), self._ctx.logger,
                timeout_s=self._ctx.download_timeout_s)
        return ev.model_copy(update=update) if update else ev

    async def _chat_type(self, event: Mapping[str, Any]) -> ChatType:
        channel = str(event.get("channel"))
        kind = event.get("channel_type")
        if isinstance(kind, str) and kind:
            self._chat_types.put(channel, chat_type_for(kind, channel))
        if channel in self._chat_types:
            return self._chat_types[channel]
        kind = None
        if self._web is not None:
            try:
                info = (await self._web.conversations_info(channel=channel)).get("channel") or {}
                kind = ("im" if info.get("is_im") else "mpim" if info.get("is_mpim")
                        else "channel")
            except Exception as exc:  # guessed from the id below; asked again next time
                _log.warning("slack_channel_info_failed", channel=channel,
                             error=type(exc).__name__)
        result = chat_type_for(kind, channel)
        if kind is not None:
            self._chat_types.put(channel, result)
        return result

    async def _user_name(self, user_id: str) -> str | None:
        if user_id in self._user_names:
            return self._user_names[user_id]
        if self._web is None:
            return None
        try:
            user = (await self._web.users_info(user=user_id)).get("user") or {}
        except SlackApiError:  # e.g. user_not_found: remember that there is no name
            self._user_names.put(user_id, None)
            return None
        except Exception as exc:  # a name is optional; try again next time
            _log.warning("slack_user_info_failed", error=type(exc).__name__)
            return None
        profile = user.get("profile") or {}
        name = (profile.get("display_name") or user.get("real_name") or user.get("name")
                or None)
        self._user_names.put(user_id, name)
        return name

    async def _load_threads(self, ctx: AdapterContext) -> None:
        try:
            raw = await ctx.cursors.get(_THREADS_CURSOR)
            keys = json.loads(raw or "[]")
        except Exception as exc:  # only costs the memory of the bot's threads
            ctx.logger.warning("slack_threads_unreadable", error=type(exc).__name__)
            return
        for key in keys if isinstance(keys, list) else ():
            if isinstance(key, str):
                self._bot_threads.put(key, None)

    async def _remember_thread(self, channel: str, thread_ts: str) -> None:
        if not self._bot_threads.put(f"{channel}:{thread_ts}", None) or self._ctx is None:
            return
        keys = list(self._bot_threads)[-_THREADS_PERSISTED:]
        try:
            await self._ctx.cursors.set(_THREADS_CURSOR, json.dumps(keys))
        except Exception as exc:  # remembered in memory; written again with the next thread
            self._ctx.logger.warning("slack_threads_not_saved", error=type(exc).__name__)

    # -- outbound ------------------------------------------------------------------------------

    def _thread_for(self, chat_id: str, thread_id: str | None, reply_to: str | None) -> str | None:
        if thread_id:
            return thread_id
        if reply_to and not chat_id.startswith("D"):
            return reply_to  # a top-level channel message: the reply starts its thread
        return None

    async def send(self, message: OutboundMessage) -> SendResult:
        """Post the text (then any attachments). Never raises for platform errors."""
        web = self._web
        if web is None:
            return SendResult.failure(ErrorKind.TRANSIENT, "slack adapter not started")
        if len(message.text) > self.capabilities.max_length:
            return _too_long(len(message.text))
        thread_ts = self._thread_for(message.chat_id, message.thread_id, message.reply_to)
        ids: list[str] = []
        if message.text or not message.attachments:
            kwargs: dict[str, Any] = {"channel": message.chat_id, "text": _text(message.text,
                                      message.formatted), "mrkdwn": message.formatted}
            if message.buttons:
                kwargs["blocks"] = button_blocks(kwargs["text"], message.buttons,
                                                 mrkdwn=message.formatted)
            if thread_ts:
                kwargs["thread_ts"] = thread_ts
            if message.delivery_key:
                kwargs["metadata"] = reply_metadata(message.delivery_key)
            try:
                resp = await web.chat_postMessage(**kwargs)
            except Exception as exc:  # noqa: BLE001 - mapped into the result
                return failure_for(exc)
            ids.append(str(resp.get("ts") or ""))
            if thread_ts:
                await self._remember_thread(message.chat_id, thread_ts)
        for att in message.attachments:
            res = await self.send_media(message.chat_id, att, thread_id=thread_ts)
            if not res.ok and not ids:
                return res
            ids.extend(res.message_ids)
        return SendResult.success(*ids)

    async def already_delivered(self, ref: DeliveryRef) -> dict[int, str] | None:
        """The final's parts found in the chat by their metadata (see adapters.slack.delivered);
        None when the history cannot be read."""
        if self._web is None:
            return None
        try:
            return await find_delivered(
                self._web, ref, self._thread_for(ref.chat_id, ref.thread_id, ref.reply_to))
        except Exception as exc:  # noqa: BLE001 - cannot tell: the caller sends it again
            _log.warning("slack_delivery_check_failed", error=type(exc).__name__)
            return None

    async def edit(
        self, chat_id: str, message_id: str, text: str, *, formatted: bool = True
    ) -> SendResult:
        """`chat.update` in place (streaming previews and the final text)."""
        if self._web is None:
            return SendResult.failure(ErrorKind.TRANSIENT, "slack adapter not started")
        if len(text) > self.capabilities.max_length:
            return _too_long(len(text))
        try:
            await self._web.chat_update(channel=chat_id, ts=message_id,
                                        text=_text(text, formatted))
        except Exception as exc:  # noqa: BLE001 - mapped into the result
            return failure_for(exc)
        return SendResult.success(message_id)

    async def delete(self, chat_id: str, message_id: str) -> SendResult:
        if self._web is None:
            return SendResult.failure(ErrorKind.TRANSIENT, "slack adapter not started")
        try:
            await self._web.chat_delete(channel=chat_id, ts=message_id)
        except Exception as exc:  # noqa: BLE001 - mapped into the result
            return failure_for(exc)
        return SendResult.success(message_id)

    async def typing(self, chat_id: str, thread_id: str | None = None) -> SendResult:
        return SendResult.failure(ErrorKind.UNKNOWN, "slack bots have no typing indicator")

    async def send_media(
        self,
        chat_id: str,
        attachment: OutboundAttachment,
        *,
        thread_id: str | None = None,
        caption: str | None = None,
    ) -> SendResult:
        """Upload one file with the v2 flow; the result's id is the Slack file id."""
        if self._web is None:
            return SendResult.failure(ErrorKind.TRANSIENT, "slack adapter not started")
        try:
            file_id = await upload_file(self._web, channel=chat_id, name=Path(attachment.path).name,
                                        data=await attachment_bytes(attachment),
                                        thread_ts=thread_id, caption=caption)
        except OSError:
            return SendResult.failure(ErrorKind.UNKNOWN, "attachment could not be read")
        except Exception as exc:  # noqa: BLE001 - mapped into the result
            return failure_for(exc)
        if thread_id:
            await self._remember_thread(chat_id, thread_id)
        return SendResult.success(file_id)


def _too_long(length: int) -> SendResult:
    """The declared `max_length` is enforced here (measured before escaping), so the gateway's
    split-and-retry applies before Slack itself would fold or refuse the message."""
    return SendResult.failure(ErrorKind.TOO_LONG, f"{length} chars > {MAX_LENGTH}")


def _text(text: str, formatted: bool) -> str:
    return text if formatted else text.translate(_PLAIN)

