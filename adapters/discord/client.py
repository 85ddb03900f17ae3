"""The discord.py client the adapter runs: intents, options and event hooks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import discord

from adapters.discord.settings import DiscordSettings

__all__ = ["HermesClient", "IdentifyPacer", "build_client", "intents", "rest_client"]


def intents() -> discord.Intents:
    """Guilds (channel and thread cache), guild and DM messages, and MESSAGE_CONTENT.

    MESSAGE_CONTENT is privileged: it must also be enabled for the bot in the developer portal,
    otherwise Discord closes the gateway with 4014 (discord.py raises
    `PrivilegedIntentsRequired`).
    """
    value = discord.Intents.none()
    value.guilds = True
    value.guild_messages = True
    value.dm_messages = True
    value.message_content = True
    return value


class IdentifyPacer:
    """One IDENTIFY at a time, `interval_s` apart, for every shard client of this process
    (Discord allows one per 5 s per bot)."""

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = interval_s
        self._clock = clock
        self._last: float | None = None
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        async with self._lock:
            if self._last is not None:
                await asyncio.sleep(max(0.0, self._last + self._interval - self._clock()))
            self._last = self._clock()


class HermesClient(discord.Client):
    """Forwards gateway activity to the adapter.

    Every received frame (dispatches and heartbeat ACKs alike) reports progress; new messages
    go to `messages`, an ordered queue drained by one adapter task.
    """

    def __init__(
        self,
        *,
        messages: asyncio.Queue[discord.Message | None],
        progress: Any,
        connected: Any,
        ready: Any = None,
        interaction: Any = None,
        new_session: Any = None,
        reidentify_delay_s: float = 5.0,
        pacer: IdentifyPacer | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self._pacer = pacer
        self.messages = messages
        self._interaction_hook = interaction
        self._reidentify_delay_s = reidentify_delay_s
        self._progress = progress
        self._connected = connected
        self._ready_hook = ready
        self._new_session_hook = new_session

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        """Discord allows one IDENTIFY per 5 s per bot: wait before identifying again, and
        for the other shards' IDENTIFYs."""
        if not initial:
            await asyncio.sleep(self._reidentify_delay_s)
        if self._pacer is not None:
            await self._pacer.wait()

    async def on_socket_raw_receive(self, _msg: str) -> None:
        self._progress()

    async def on_connect(self) -> None:
        """READY was received: a new session is up (guilds may still be streaming in; a
        RESUME dispatches `on_resumed` instead)."""
        self._progress()
        if self._new_session_hook is not None:
            self._new_session_hook()
        self._connected()

    async def on_ready(self) -> None:
        """After a new session (not after RESUME): guilds are cached, catch-up may start."""
        self._progress()
        self._connected()
        if self._ready_hook is not None:
            self._ready_hook()

    async def on_resumed(self) -> None:
        self._progress()
        self._connected()

    async def on_message(self, message: discord.Message) -> None:
        self.messages.put_nowait(message)

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        """A button press (or another interaction): handed to the adapter's hook."""
        if self._interaction_hook is not None:
            await self._interaction_hook(interaction)


def build_client(
    settings: DiscordSettings, *, messages: asyncio.Queue[discord.Message | None],
    progress: Any,
    connected: Any, ready: Any = None, interaction: Any = None, new_session: Any = None,
    shard: tuple[int, int] | None = None, pacer: IdentifyPacer | None = None,
) -> HermesClient:
    """A fresh client (one per `start()` and shard): never reuse one after it closed.
    `shard`: (shard id, shard count) it IDENTIFYs as; None: unsharded."""
    sharding: dict[str, int] = ({} if shard is None else
                                {"shard_id": shard[0], "shard_count": shard[1]})
    return HermesClient(
        messages=messages,
        progress=progress,
        connected=connected,
        ready=ready,
        interaction=interaction,
        new_session=new_session,
        reidentify_delay_s=settings.reidentify_delay_s,
        pacer=pacer,
        intents=intents(),
        enable_debug_events=True,
        guild_ready_timeout=settings.guild_ready_timeout_s,
        max_ratelimit_timeout=settings.max_ratelimit_wait_s,
        max_messages=None,
        chunk_guilds_at_startup=False,
        **sharding,
    )


def rest_client(settings: DiscordSettings) -> discord.Client:
    """The client sends go through: logged in over HTTP only, it never connects a gateway
    (the shards' clients receive)."""
    return discord.Client(intents=intents(), max_ratelimit_timeout=settings.max_ratelimit_wait_s,
                          max_messages=None, chunk_guilds_at_startup=False)
