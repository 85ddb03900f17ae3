"""Catch-up after downtime: messages posted while no session was live.

Discord replays missed events only to a RESUMEd session. After a restart (or a new IDENTIFY)
the adapter reads, for each channel it recently saw traffic in, the messages after the last one
it emitted (bounded in channels, messages and age), and for the guild channels it has not seen
traffic in yet, those after the newest position it knows (a first message in a channel posted
while no session was live), and feeds them through the normal inbound path; the gateway's
durable dedup drops anything already recorded.

The catch-up starts from the cursor as loaded at start, not from the live one: a newer message
of the channel may arrive live between READY and on_ready (which waits for the guilds) and
must not move the starting point past a message that only the catch-up can bring. For the same
reason the stored cursor of those channels stays at its loaded value until the catch-up's
messages have been emitted (`release`).

With several gateway shards each shard has its own cursor (`seen_channels:<shard>/<count>`,
its guilds' channels; DMs belong to shard 0): a shard moving to another replica continues
from its own cursor there, and two replicas running different shards never overwrite each
other's positions. The first start with shards seeds each shard's cursor from the unsharded
one.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Mapping

import discord

from gateway.ports import CursorStore, EventLogger

__all__ = ["NewChannels", "SeenChannels", "backfill", "shard_of"]

CURSOR_NAME = "seen_channels"
#: the cursor's entry that is no channel: its baseline (see `SeenChannels.baseline`)
_BASELINE = "since"


def shard_of(guild_id: int | None, count: int) -> int:
    """The shard Discord sends a guild's events to; DMs go to shard 0."""
    return 0 if guild_id is None else (guild_id >> 22) % count


class SeenChannels:
    """Per channel: the last emitted message id and the guild id, persisted in one cursor
    (per shard, `shard` = (shard id, count); None: unsharded)."""

    def __init__(self, cursors: CursorStore, *, max_channels: int = 50,
                 shard: tuple[int, int] | None = None) -> None:
        self._cursors = cursors
        self._max = max_channels
        self._shard = shard
        self.name = CURSOR_NAME if shard is None else f"{CURSOR_NAME}:{shard[0]}/{shard[1]}"
        self.channels: dict[str, tuple[int, int | None]] = {}
        #: the loaded cursor while its catch-up is pending (None once released)
        self._held: dict[str, tuple[int, int | None]] | None = None
        #: a message id of when this cursor was first used (`NewChannels` reads no further
        #: back); `baseline_new` until it is stored
        self.baseline = 0
        self.baseline_new = False

    async def load(self) -> None:
        """Read the cursor; a missing or unreadable one means nothing to catch up."""
        raw = await self._cursors.get(self.name)
        if raw is None and self._shard is not None:
            shard, count = self._shard
            raw_unsharded = await self._cursors.get(CURSOR_NAME)
            unsharded = _decode(raw_unsharded)
            self.channels = {k: v for k, v in unsharded.items()
                             if shard_of(v[1], count) == shard}
            self.baseline = _baseline_of(raw_unsharded)
        else:
            self.channels = _decode(raw)
            self.baseline = _baseline_of(raw)
        if not self.baseline:
            self.baseline = discord.utils.time_snowflake(dt.datetime.now(dt.UTC))
            self.baseline_new = True
        self._held = dict(self.channels)

    def catch_up_points(self) -> dict[str, tuple[int, int | None]]:
        """Where a catch-up starts: the loaded cursor while its catch-up is pending, else the
        live one (a new session later in the same run)."""
        return dict(self._held if self._held is not None else self.channels)

    async def release(self) -> None:
        """The catch-up's messages were emitted: the stored cursor may move on."""
        if self._held is None:
            return
        self._held = None
        await self._store(self.channels)

    def hold_back(self, points: Mapping[str, tuple[int, int | None]]) -> bool:
        """Channels with a message after the given position that was never emitted (its
        recording failed, or it was still queued when the run ended): the catch-up reads
        them from there, whether the cursor knew the channel or not (a DM's first message;
        chaos seed 41). Only moves positions back; True when something changed (`save`)."""
        changed = False
        for key, (position, guild_id) in points.items():
            for view in (self.channels, self._held):
                if view is None:
                    continue
                last = view.get(key)
                if last is None or last[0] > position:
                    view[key] = (position, guild_id)
                    changed = True
        return changed

    async def save(self) -> None:
        """Store the cursor (held channels at their held position)."""
        stored = dict(self.channels)
        if self._held is not None:
            stored.update((k, v) for k, v in self._held.items() if k in stored)
        await self._store(stored)

    async def _store(self, channels: Mapping[str, tuple[int, int | None]]) -> None:
        data: dict[str, object] = {**channels, _BASELINE: [self.baseline, None]}
        await self._cursors.set(self.name, json.dumps(data))
        self.baseline_new = False

    def owns(self, guild_id: int | None) -> bool:
        """Whether a channel of `guild_id` (None: a DM) belongs to this cursor's shard."""
        return self._shard is None or shard_of(guild_id, self._shard[1]) == self._shard[0]

    async def note(self, channel_id: int, message_id: int, guild_id: int | None) -> None:
        key = str(channel_id)
        last = self.channels.get(key, (0, None))[0]
        if message_id <= last:
            return
        self.channels[key] = (message_id, guild_id)
        if len(self.channels) > self._max:
            newest = sorted(self.channels.items(), key=lambda kv: kv[1][0])[-self._max:]
            self.channels = dict(newest)
        await self.save()  # held channels keep their loaded position


def _decode(raw: str | None) -> dict[str, tuple[int, int | None]]:
    try:
        data = json.loads(raw) if raw else {}
        return {str(k): (int(v[0]), int(v[1]) if v[1] else None) for k, v in data.items()
                if k != _BASELINE}
    except (ValueError, TypeError, IndexError, AttributeError):
        return {}


def _baseline_of(raw: str | None) -> int:
    try:
        data = json.loads(raw) if raw else {}
        return int(data.get(_BASELINE, [0])[0])
    except (ValueError, TypeError, IndexError, AttributeError):
        return 0


async def backfill(
    client: discord.Client,
    points: Mapping[str, tuple[int, int | None]],
    deliver: Callable[[discord.Message], None],
    *,
    per_channel: int = 50,
    max_age_s: float = 6 * 3600,
    max_unseen: int = 20,
    logger: EventLogger,
) -> int:
    """Hand every message newer than `points` (channel -> (last emitted id, guild id)) and
    younger than `max_age_s` to `deliver`, oldest first per channel; also those of up to
    `max_unseen` guild channels the cursor does not know, newer than its newest position.
    Returns how many. Must not raise for platform errors (logged, skipped)."""
    horizon = time.time() - max_age_s
    count = 0
    starts: dict[int, tuple[int, discord.abc.Messageable]] = {}
    for key, (last_id, guild_id) in list(points.items()):
        cid = int(key)
        found = client.get_channel(cid) or client.get_partial_messageable(
            cid, guild_id=guild_id
        )
        if isinstance(found, discord.abc.Messageable):  # a category or forum: no history
            starts[cid] = (last_id, found)
    # A channel of a guild this session sees but the cursor does not know (its first message
    # came while no session was live): read it from the newest position the cursor knows
    # (ids are time-ordered), so that message is not lost.
    since = max((last for last, _g in points.values()), default=0)
    if since:
        for unseen in _unseen(client, starts, since)[:max_unseen]:
            starts[unseen.id] = (since, unseen)
    for cid, (last_id, channel) in starts.items():
        try:
            async for message in channel.history(
                after=discord.Object(last_id), limit=per_channel, oldest_first=True
            ):
                if message.created_at.timestamp() >= horizon:
                    deliver(message)
                    count += 1
        except (discord.HTTPException, discord.InvalidData) as exc:
            logger.warning("discord_backfill_failed", channel=str(cid), error=type(exc).__name__)
    return count


def _unseen(client: discord.Client, known: Mapping[int, object], since: int
            ) -> list[discord.TextChannel | discord.Thread]:
    """Text channels and threads of the session's guilds that are not in `known` and may
    have a message newer than `since` (their last message id, when Discord sent one), newest
    first."""
    out: list[tuple[int, discord.TextChannel | discord.Thread]] = []
    for guild in client.guilds:
        channels: list[discord.TextChannel | discord.Thread] = [*guild.text_channels,
                                                                 *guild.threads]
        for channel in channels:
            last = channel.last_message_id
            if channel.id in known or (last is not None and last <= since):
                continue
            out.append((last or since, channel))
    out.sort(key=lambda c: c[0], reverse=True)
    return [c for _last, c in out]


class NewChannels:
    """Live messages in channels the cursor did not know when the run started.

    The catch-up reads the channels of the cursor and the guild channels it can list; a DM,
    or a thread the guild list does not show, whose messages came while no session was live
    (a replica killed with the message on its socket, before it was emitted: chaos seed 2027)
    is found only when its next message arrives live. Before that message is emitted, the
    channel's history since the cursor's baseline (bounded by the catch-up's age) is read
    once per run, and those older messages go first (the gateway's durable dedup drops what
    it has)."""

    def __init__(self, points: Mapping[str, tuple[int, int | None]], *, baseline: int = 0,
                 per_channel: int = 50, max_age_s: float = 6 * 3600) -> None:
        """`baseline`: the cursor's first use (`SeenChannels.baseline`); a new channel is
        read from it or from `max_age_s` ago, whichever is later. Without one, from the
        newest position of `points`."""
        self._known = set(points)
        horizon = discord.utils.time_snowflake(
            dt.datetime.now(dt.UTC) - dt.timedelta(seconds=max_age_s))
        self._since = (max(baseline, horizon) if baseline
                       else max((last for last, _g in points.values()), default=0))
        self._done: set[str] = set()
        self._per_channel = per_channel
        self._max_age_s = max_age_s

    def covered(self, channel_id: int) -> None:
        """The catch-up read this channel: nothing to look for."""
        self._done.add(str(channel_id))

    async def older(self, message: discord.Message, logger: EventLogger) -> list[discord.Message]:
        """The messages before `message` in its channel to emit first (usually none)."""
        key = str(message.channel.id)
        if not self._since or key in self._known or key in self._done:
            return []
        self._done.add(key)
        horizon = time.time() - self._max_age_s
        found: list[discord.Message] = []
        try:
            async for old in message.channel.history(
                    after=discord.Object(self._since), before=message,
                    limit=self._per_channel, oldest_first=True):
                if old.created_at.timestamp() >= horizon:
                    found.append(old)
        except (discord.HTTPException, discord.InvalidData) as exc:
            logger.warning("discord_backfill_failed", channel=key, error=type(exc).__name__)
        return found
