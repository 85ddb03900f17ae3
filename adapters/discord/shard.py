"""`ShardRun`: one gateway connection (a shard, or the whole bot unsharded) of the adapter.

Each shard has its own discord.py client, its own ordered queue and consumer, and its own
catch-up cursor (`SeenChannels`), so one shard starts and stops without touching the
others: a shard lease moving to another replica stops only that shard here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import discord

from adapters.discord.backfill import NewChannels, SeenChannels, backfill
from adapters.discord.client import HermesClient, IdentifyPacer, build_client
from adapters.discord.inbound import Inbound, MessageLog
from adapters.discord.settings import DiscordSettings
from gateway.ports import AdapterContext

__all__ = ["ShardRun"]


@dataclass(slots=True)
class _CatchUp:
    """A catch-up in progress: the ids it has queued, and the live messages held after it."""

    pending: bool = False
    ids: set[int] = field(default_factory=set)
    live: list[discord.Message] = field(default_factory=list)


class ShardRun:
    """Runs one shard until cancelled. `run()` returns or raises when the client stops on its
    own (the adapter turns that into its failure); cancelling it closes the client."""

    def __init__(
        self, name: str, settings: DiscordSettings, ctx: AdapterContext, *,
        shard: tuple[int, int] | None, log: MessageLog, pacer: IdentifyPacer,
        connected: Callable[[HermesClient], None],
        interaction: Callable[[discord.Interaction], Awaitable[None]],
        behind: dict[str, tuple[int, int | None]] | None = None,
    ) -> None:
        """`shard`: (shard id, count); None: the unsharded connection. `connected(client)` is
        called when the shard's session is up (READY or RESUMED). `behind` (shared by the
        adapter's runs, so it outlives a failed one): channel -> (position, guild) the next
        catch-up must read from, for messages a run ended without emitting whose position
        could not be stored yet (the store was full)."""
        self.name = name if shard is None else f"{name}:shard{shard[0]}"
        self._catching = _CatchUp()
        self._settings = settings
        self._ctx = ctx
        self._shard = shard
        self._log = log
        self._pacer = pacer
        self._connected = connected
        self._interaction = interaction
        self._behind = behind if behind is not None else {}
        self._failed: discord.Message | None = None
        self._new = NewChannels({})

    async def run(self) -> None:
        ctx = self._ctx
        self._catching = _CatchUp()  # a run after a failure starts afresh
        self._failed = None
        seen = SeenChannels(ctx.cursors, shard=self._shard)
        try:
            await seen.load()
        except Exception as exc:  # a broken cursor store only costs the catch-up
            ctx.logger.warning("discord_cursor_unreadable", error=type(exc).__name__,
                               cursor=seen.name)
        await self._store_behind(seen)
        if seen.baseline_new:
            try:
                await seen.save()
            except Exception as exc:  # noqa: BLE001 - stored with the next position
                ctx.logger.warning("discord_cursor_not_saved", error=type(exc).__name__)
        self._new = NewChannels(seen.catch_up_points(), baseline=seen.baseline)
        #: messages in arrival order; None marks the end of a catch-up's messages
        queue: asyncio.Queue[discord.Message | None] = asyncio.Queue()
        catch_up: set[asyncio.Task[None]] = set()
        client: HermesClient

        catching = self._catching

        def caught_up(message: discord.Message) -> None:
            catching.ids.add(message.id)
            self._new.covered(message.channel.id)
            queue.put_nowait(message)

        async def run_catch_up(points: dict[str, tuple[int, int | None]]) -> None:
            await backfill(client, points, caught_up, logger=ctx.logger)
            queue.put_nowait(None)

        def on_new_session() -> None:
            # From READY on, live messages wait for the catch-up that on_ready starts.
            catching.pending = True

        def on_ready() -> None:  # after on_connect (`on_new_session`) of a new session
            task = asyncio.create_task(run_catch_up(seen.catch_up_points()),
                                       name=f"{self.name}:backfill")
            catch_up.add(task)
            task.add_done_callback(catch_up.discard)

        client = build_client(
            self._settings, messages=queue, progress=ctx.progress,
            connected=lambda: self._connected(client), ready=on_ready,
            new_session=on_new_session,
            interaction=self._interaction, shard=self._shard, pacer=self._pacer)
        inbound = Inbound(
            ctx.name, client, cache_dir=Path(ctx.cache_dir), budget=ctx.download_budget,
            log=self._log, logger=ctx.logger, download_timeout_s=ctx.download_timeout_s)
        tasks = {
            asyncio.create_task(client.start(self._settings.plain_token()),
                                name=f"{self.name}:client"),
            asyncio.create_task(self._consume(queue, inbound, seen), name=f"{self.name}:inbound"),
        }
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finished = done.pop()
            failure = None if finished.cancelled() else finished.exception()
            if failure is not None:
                raise failure
        finally:
            await _shutdown(client, tasks | catch_up, ctx)
            left = [self._failed, *catching.live]
            while not queue.empty():
                left.append(queue.get_nowait())
            self._note_behind([m for m in left if m is not None])
            await self._store_behind(seen)

    def _note_behind(self, messages: list[discord.Message]) -> None:
        """Messages this run received but never emitted: their channels' catch-up must
        start before them (Discord delivers them to no later session)."""
        for message in messages:
            if self._log.was_emitted(str(message.id)):
                continue
            key = str(message.channel.id)
            have = self._behind.get(key)
            if have is None or have[0] >= message.id:
                self._behind[key] = (message.id - 1, message.guild.id if message.guild
                                     else None)

    async def _store_behind(self, seen: SeenChannels) -> None:
        """Move this shard's channels of `behind` back in the cursor and store it; once
        stored they are forgotten here. Must not raise (the store may be full or closing)."""
        mine = {k: v for k, v in self._behind.items() if seen.owns(v[1])}
        if not mine:
            return
        seen.hold_back(mine)
        try:
            await seen.save()
        except Exception as exc:  # noqa: BLE001 - kept in memory for the next run
            self._ctx.logger.warning("discord_cursor_not_saved", error=type(exc).__name__)
            return
        for key in mine:
            if self._behind.get(key) == mine[key]:
                del self._behind[key]

    async def _consume(self, queue: asyncio.Queue[discord.Message | None], inbound: Inbound,
                       seen: SeenChannels) -> None:
        """Emit messages one at a time, in arrival order; then advance the catch-up cursor.

        A message the gateway could not record (storage down or full) ends the run with an
        error: Discord never delivers it again, but the cursor stays before it, so the
        catch-up after the supervisor's restart brings it and everything after it, in order.
        A message that cannot be read at all is skipped with a log line."""
        ctx = self._ctx
        catching = self._catching
        while True:
            message = await queue.get()
            if message is None:  # the catch-up's messages are all emitted
                try:
                    await seen.release()
                except Exception as exc:  # noqa: BLE001 - only the catch-up cursor lags behind
                    ctx.logger.warning("discord_cursor_not_saved", error=type(exc).__name__)
                catching.pending = False
                for live in sorted(catching.live, key=lambda m: m.id):
                    await self._emit_live(live, inbound, seen)
                catching.live.clear()
                continue
            if catching.pending and message.id not in catching.ids:
                # Live while the catch-up still reads history: after it, so a message
                # only the catch-up brings (one whose recording failed before the restart)
                # is not overtaken by a newer one (long chaos run, seed 772018).
                catching.live.append(message)
                continue
            if message.id in catching.ids:
                catching.ids.discard(message.id)
                await self._emit_one(message, inbound, seen)
            else:
                await self._emit_live(message, inbound, seen)

    async def _emit_live(self, message: discord.Message, inbound: Inbound,
                         seen: SeenChannels) -> None:
        """A live message; in a channel new to this run's cursor, what it missed goes first."""
        for older in await self._new.older(message, self._ctx.logger):
            await self._emit_one(older, inbound, seen)
        await self._emit_one(message, inbound, seen)

    async def _emit_one(self, message: discord.Message, inbound: Inbound,
                        seen: SeenChannels) -> None:
        """One message to the gateway (see `_consume`)."""
        ctx = self._ctx
        if self._log.was_emitted(str(message.id)):
            return
        try:
            event = await inbound.to_event(message)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            ctx.logger.warning("discord_inbound_failed", error=type(exc).__name__)
            return
        if event is None:
            return
        try:
            await ctx.emit(event)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            ctx.logger.warning("discord_inbound_failed", error=type(exc).__name__,
                               recorded=False)
            self._failed = message
            raise
        self._log.mark_emitted(event.event_id)
        guild = message.guild.id if message.guild else None
        try:
            await seen.note(message.channel.id, message.id, guild)
        except Exception as exc:  # noqa: BLE001 - only the catch-up cursor lags behind
            ctx.logger.warning("discord_cursor_not_saved", error=type(exc).__name__)


async def _shutdown(client: HermesClient, tasks: set[asyncio.Task[None]],
                    ctx: AdapterContext) -> None:
    # stop reading the socket first, so no event is dispatched into a closing client
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    # discord.py leaves the wait for guilds after READY running past close(); it would then
    # dispatch on_ready into the closed client (whose loop is gone) and log a crash
    ready_wait: asyncio.Task[None] | None = getattr(client._connection, "_ready_task", None)
    if ready_wait is not None:
        ready_wait.cancel()
    try:
        await client.close()
    except Exception as exc:  # the client is dropped either way
        ctx.logger.warning("discord_client_close_failed", error=type(exc).__name__)
