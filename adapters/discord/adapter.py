"""`DiscordAdapter`: discord.py gateway in, REST out."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import discord
import structlog

from adapters.discord.client import HermesClient, IdentifyPacer, rest_client
from adapters.discord.components import buttons_view, interaction_event
from adapters.discord.endpoints import apply_endpoints
from adapters.discord.errors import failure_from_exception
from adapters.discord.inbound import MessageLog
from adapters.discord.settings import DiscordSettings
from adapters.discord.shard import ShardRun
from gateway.events import ErrorKind, OutboundAttachment, OutboundMessage, SendResult
from gateway.ports import (
    AdapterAuthError,
    AdapterContext,
    AdapterError,
    BasePlatformAdapter,
    BudgetSpec,
    Capabilities,
    Identity,
    RateProfile,
    RateWindow,
    attachment_bytes,
)

__all__ = ["MAX_MESSAGE_LENGTH", "RATE_PROFILE", "DiscordAdapter"]

_log = structlog.get_logger("adapters.discord")

MAX_MESSAGE_LENGTH = 2000
RATE_PROFILE = RateProfile(per_chat=BudgetSpec((RateWindow(5, 5.0),)))
"""Discord's limit per channel: 5 messages per 5 seconds."""
_FATAL_CLOSE_CODES = {4004: "authentication failed", 4013: "invalid intents",
                      4014: "disallowed intents"}
#: Replies may ping the user they answer, never @everyone, roles or other users.
_NO_MENTIONS = discord.AllowedMentions(everyone=False, users=False, roles=False,
                                       replied_user=True)


def _transport_error(exc: BaseException | None) -> AdapterError:
    if isinstance(exc, discord.LoginFailure):
        return AdapterAuthError("Discord refused the bot token (401)")
    if isinstance(exc, discord.PrivilegedIntentsRequired):
        return AdapterAuthError(
            "Discord refused the MESSAGE_CONTENT intent: enable it for the bot in the "
            "developer portal (Bot → Privileged Gateway Intents)"
        )
    if isinstance(exc, discord.ConnectionClosed) and exc.code in _FATAL_CLOSE_CODES:
        return AdapterAuthError(f"Discord closed the gateway: {_FATAL_CLOSE_CODES[exc.code]}")
    if exc is None:
        return AdapterError("discord client stopped unexpectedly")
    return AdapterError(f"discord transport failed: {type(exc).__name__}")


class DiscordAdapter(BasePlatformAdapter):
    """One Discord bot: a REST client for sending, and a gateway connection per shard run here.

    The library owns each gateway session: heartbeats, reconnects and RESUME (missed events
    are replayed by Discord). Every received frame counts as progress. `send`, `edit`, `typing`,
    `delete` and `send_media` never raise for platform errors.
    """

    format_hint = (
        "You are chatting on Discord. Discord Markdown works (bold, italics, lists, code "
        "blocks); keep replies concise, long ones are split into 2,000-character messages."
    )

    settings: DiscordSettings

    def __init__(
        self, name: str, settings: DiscordSettings | Mapping[str, Any] | None = None
    ) -> None:
        """Raises `pydantic.ValidationError` for invalid settings (a mapping is validated)."""
        self.name = name
        self.settings = settings = DiscordSettings.coerce(settings)
        self.capabilities = Capabilities(
            edit=True, typing=True, threads=True, media=True, delete=True,
            max_length=MAX_MESSAGE_LENGTH, length_measure="chars", dialect="discord",
            rate_profile=RATE_PROFILE, liveness_window_s=settings.liveness_window_s,
            exclusive_intake=True, intake_shards=settings.shards,
        )
        self._client: discord.Client | None = None
        self._stopping = False
        self._stop_run: asyncio.Event | None = None
        self._log = MessageLog()
        #: channel -> catch-up position for messages a shard run ended without emitting
        self._behind: dict[str, tuple[int, int | None]] = {}
        self._commands: list[tuple[str, str]] = []

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self, ctx: AdapterContext) -> None:
        """Log in for sending, run the gateway shards this process should receive for, and
        return at `ctx.stop_event` or `stop()`.

        The shards: every one of `settings.shards` (one connection when 1), or those
        `ctx.shards` names on a replica, started and stopped one at a time as that set
        changes; none without `ctx.intake` (sending only). Raises `AdapterAuthError` when the
        token or the privileged intent is refused and `AdapterError` when a client dies
        otherwise. Fresh discord.py clients are built on every call.
        """
        if not self.settings.plain_token():
            raise AdapterAuthError("platforms.discord.token is not set")
        self._stopping = False
        stop_run = self._stop_run = asyncio.Event()
        restore = apply_endpoints(self.settings.api_base_url, self.settings.gateway_url)
        rest = rest_client(self.settings)
        shards: dict[int, asyncio.Task[None]] = {}
        closing: set[asyncio.Task[None]] = set()  # shards stopped while the others run on
        waits = {
            asyncio.create_task(ctx.stop_event.wait(), name=f"{self.name}:stop-wait"),
            asyncio.create_task(stop_run.wait(), name=f"{self.name}:stop-call"),
        }
        try:
            try:
                await rest.login(self.settings.plain_token())
            except Exception as exc:
                raise _transport_error(exc) from exc
            self._client = rest
            if rest.user is not None:
                self.identity = Identity(id=str(rest.user.id), username=rest.user.name)
            if not ctx.intake:  # another replica receives: sends work now
                ctx.connected()
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                return
            await self._check_shard_count(rest, ctx)
            await self._run_shards(ctx, shards, closing, waits)
        finally:
            await _cancel({*waits, *shards.values(), *closing})
            if self._client is rest:
                self._client = None
            try:
                await rest.close()
            except Exception as exc:  # the client is dropped either way
                _log.warning("discord_client_close_failed", error=type(exc).__name__)
            restore()

    async def _run_shards(self, ctx: AdapterContext, shards: dict[int, asyncio.Task[None]],
                          closing: set[asyncio.Task[None]],
                          waits: set[asyncio.Task[Any]]) -> None:
        count = self.settings.shards
        pacer = IdentifyPacer(self.settings.reidentify_delay_s)

        def on_connected(client: HermesClient) -> None:
            if client.user is not None:  # known from READY on: before the gateway is told
                self.identity = Identity(id=str(client.user.id), username=client.user.name)
            ctx.connected()

        async def on_interaction(interaction: discord.Interaction) -> None:
            await self._on_interaction(ctx, interaction)

        def follow(held: frozenset[int]) -> None:
            for shard in sorted(set(shards) - held):
                task = shards.pop(shard)
                task.cancel()
                closing.add(task)
                task.add_done_callback(closing.discard)
                ctx.logger.info("discord_shard_stopped", shard=shard, shards=count)
            for shard in sorted(held - set(shards)):
                run = ShardRun(self.name, self.settings, ctx, log=self._log, pacer=pacer,
                               shard=None if count == 1 else (shard, count),
                               connected=on_connected, interaction=on_interaction,
                               behind=self._behind)
                shards[shard] = asyncio.create_task(run.run(), name=run.name)
                if count > 1:
                    ctx.logger.info("discord_shard_started", shard=shard, shards=count)

        held = ctx.shards.held() if ctx.shards is not None else frozenset(range(count))
        follow(held)
        if not held:  # the last shard went while starting: sends work; the gate says standby
            ctx.connected()
        while True:
            moved: asyncio.Task[frozenset[int]] | None = None
            if ctx.shards is not None:
                moved = asyncio.create_task(ctx.shards.wait_change(held),
                                            name=f"{self.name}:shards")
            watched: set[asyncio.Task[Any]] = {*waits, *shards.values()}
            if moved is not None:
                watched.add(moved)
            try:
                done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if moved is not None and not moved.done():
                    moved.cancel()
            if done & waits:
                return
            if self._stopping or ctx.stop_event.is_set():
                return
            crashed = [t for t in done if t is not moved]
            if crashed:
                finished = crashed[0]
                cause = None if finished.cancelled() else finished.exception()
                raise _transport_error(cause) from cause
            if moved is not None:
                held = moved.result()
                follow(held)

    async def _check_shard_count(self, rest: discord.Client, ctx: AdapterContext) -> None:
        """Log when Discord recommends more shards than configured. Must not raise."""
        try:
            recommended, _url, _limits = await rest.http.get_bot_gateway()
        except Exception as exc:  # noqa: BLE001 - only advice
            ctx.logger.info("discord_gateway_info_unavailable", error=type(exc).__name__)
            return
        if recommended > self.settings.shards:
            ctx.logger.warning("discord_more_shards_recommended",
                               shards=self.settings.shards, recommended=recommended)

    async def stop(self) -> None:
        """Ask a running `start()` to close the connection and return. Idempotent; does not
        wait for the close to finish (await the `start()` task for that)."""
        self._stopping = True
        if self._stop_run is not None:
            self._stop_run.set()

    async def _on_interaction(self, ctx: AdapterContext,
                              interaction: discord.Interaction) -> None:
        """A button press: handed to the gateway (durably), then acknowledged as a deferred
        update so the client stops waiting. Must not raise."""
        try:
            event = interaction_event(self.name, interaction)
            if event is None:
                return
            await ctx.interact(event)
            await interaction.response.defer()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            ctx.logger.warning("discord_interaction_failed", error=type(exc).__name__)

    # -- outbound ----------------------------------------------------------------------------
    def _channel(self, channel_id: str) -> discord.PartialMessageable:
        client = self._client
        if client is None or client.is_closed():
            raise ConnectionError("discord client is not running")
        return client.get_partial_messageable(int(channel_id))

    async def _call(self, action: Callable[[], Awaitable[SendResult]]) -> SendResult:
        try:
            return await asyncio.wait_for(action(), self.settings.request_timeout_s)
        except ValueError as exc:
            return SendResult.failure(ErrorKind.UNKNOWN, f"bad request: {exc}"[:200])
        except ConnectionError as exc:
            return SendResult.failure(ErrorKind.TRANSIENT, str(exc))
        except Exception as exc:
            return failure_from_exception(exc)

    async def send(self, message: OutboundMessage) -> SendResult:
        if len(message.text) > MAX_MESSAGE_LENGTH:
            return SendResult.failure(ErrorKind.TOO_LONG, f"over {MAX_MESSAGE_LENGTH} characters")
        target = message.thread_id or message.chat_id

        async def action() -> SendResult:
            channel = self._channel(target)
            options: dict[str, Any] = {"allowed_mentions": _NO_MENTIONS}
            if message.reply_to:
                # a deleted target does not fail the send: it goes out without the reference
                options["reference"] = channel.get_partial_message(
                    int(message.reply_to)
                ).to_reference(fail_if_not_exists=False)
            if message.attachments:
                options["files"] = [await _file(a) for a in message.attachments]
            if message.buttons:
                options["view"] = buttons_view(message.buttons)
            if message.delivery_key:
                # discord.py sends enforce_nonce with it: Discord returns the message already
                # created with this nonce (a few minutes) instead of posting it again
                options["nonce"] = f"hermes-{message.delivery_key}"[:25]
            sent = await channel.send(content=message.text or None, **options)
            self._log.remember(str(sent.id), target, own=True)
            return SendResult.success(str(sent.id))

        return await self._call(action)

    async def edit(
        self, chat_id: str, message_id: str, text: str, *, formatted: bool = True
    ) -> SendResult:
        if len(text) > MAX_MESSAGE_LENGTH:
            return SendResult.failure(ErrorKind.TOO_LONG, f"over {MAX_MESSAGE_LENGTH} characters")

        async def action() -> SendResult:
            channel = self._channel(self._log.channel_of(message_id) or chat_id)
            partial = channel.get_partial_message(int(message_id))
            await partial.edit(content=text, allowed_mentions=_NO_MENTIONS)
            return SendResult.success(message_id)

        return await self._call(action)

    async def delete(self, chat_id: str, message_id: str) -> SendResult:
        async def action() -> SendResult:
            channel = self._channel(self._log.channel_of(message_id) or chat_id)
            await channel.get_partial_message(int(message_id)).delete()
            return SendResult.success(message_id)

        return await self._call(action)

    async def typing(self, chat_id: str, thread_id: str | None = None) -> SendResult:
        async def action() -> SendResult:
            await self._channel(thread_id or chat_id).typing()
            return SendResult.success()

        return await self._call(action)

    async def send_media(
        self,
        chat_id: str,
        attachment: OutboundAttachment,
        *,
        thread_id: str | None = None,
        caption: str | None = None,
    ) -> SendResult:
        target = thread_id or chat_id
        try:
            file = await _file(attachment)
        except OSError as exc:
            return SendResult.failure(ErrorKind.UNKNOWN, f"cannot read attachment: {exc.strerror}")

        async def action() -> SendResult:
            sent = await self._channel(target).send(
                content=(caption or None), file=file, allowed_mentions=_NO_MENTIONS
            )
            self._log.remember(str(sent.id), target, own=True)
            return SendResult.success(str(sent.id))

        try:
            return await self._call(action)
        finally:
            file.close()

    def commands_menu(self, commands: list[tuple[str, str]]) -> None:
        """Kept for reference: commands are typed as text (`/new`); no application commands
        are registered with Discord."""
        self._commands = list(commands)


async def _cancel(tasks: set[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def _file(attachment: OutboundAttachment) -> discord.File:
    """The attachment's checked bytes as a `discord.File`. Raises `OSError` when they cannot
    be read."""
    data = await attachment_bytes(attachment)
    return discord.File(io.BytesIO(data), filename=Path(attachment.path).name)
