"""Discord shards assigned by lease: two `hermes gateway run` replicas on one PostgreSQL
database, `platforms.discord.shards: 2`, the fake Discord (which sends a guild's events only to
its shard's sessions) and the fake model.

Each replica runs one shard. `kill -9` of the replica running the first guild's shard: its
shard lease runs out (3 s here) and the survivor connects that shard too; a message posted
to that guild while no connection received it is brought by the survivor's catch-up and
answered once. The killed replica comes back: one shard moves back to it (the survivor
gives it up), and both guilds are still answered once each."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import pg_support
from tests.discord.fake_discord import FakeDiscord
from tests.discord.fake_gateway import shard_of
from tests.discord.fake_payloads import ALICE, GENERAL, GENERAL2, GUILD, GUILD2
from tests.fakes.gateway_process import until
from tests.fakes.openai_server import FakeOpenAIServer
from tests.scale_out.replica_support import Replica, ReplicaSet

pytestmark = pytest.mark.timeout(90)

SHARD = {GENERAL: shard_of(GUILD, 2), GENERAL2: shard_of(GUILD2, 2)}


@pytest.fixture
def replica_db() -> Iterator[str]:
    reason = pg_support.unreachable_reason()
    if reason is not None:
        pytest.skip(reason)
    dsn = pg_support.create_database()
    try:
        yield dsn
    finally:
        pg_support.drop_database(dsn)


def _discord(fake: FakeDiscord) -> dict[str, Any]:
    return {"discord": {"enabled": True, "token": fake.token, "shards": 2,
                        "api_base_url": fake.api_base_url, "gateway_url": fake.gateway_url,
                        "allowed_users": [str(ALICE)], "guild_ready_timeout_s": 0.2,
                        "reidentify_delay_s": 0.2}}


def _answers(fake: FakeDiscord, channel: int) -> list[str]:
    return [m.content for m in fake.bot_messages(channel) if m.content.startswith("echo:")]


async def _holders(rs: ReplicaSet) -> list[Replica | None]:
    return [await rs.leader_of(f"discord:%:shard:{i}/2") for i in range(2)]


async def _wait_spread(rs: ReplicaSet, fake: FakeDiscord, what: str) -> list[Replica]:
    """Until each shard is held by a different live replica and both shards are connected."""
    holders: list[Replica | None] = []

    async def spread() -> bool:
        nonlocal holders
        if len(await rs.live_pids()) < 2:  # also: not migrated yet
            return False
        holders = await _holders(rs)
        return (None not in holders and len(set(map(id, holders))) == 2
                and fake.gateway.live_shards() >= {(0, 2), (1, 2)})

    await _until_async(spread, what, rs)
    return [h for h in holders if h is not None]


async def _until_async(cond: Callable[[], Awaitable[bool]], what: str, rs: ReplicaSet,
                       timeout: float = 25) -> None:
    deadline = time.monotonic() + timeout
    while not await cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n{rs.logs()}")
        await asyncio.sleep(0.2)


async def test_shards_spread_over_replicas_and_move_when_one_dies(
        tmp_path: Path, replica_db: str) -> None:
    async with FakeOpenAIServer() as model, FakeDiscord(token="fake-discord-replicas") as fake:
        rs = ReplicaSet(tmp_path, replica_db, 2, model_url=model.base_url,
                        platforms=lambda r: _discord(fake))
        try:
            await rs.start_all()
            holders = await _wait_spread(rs, fake, "one shard on each replica")
            await fake.user_says("one", channel=GENERAL, mention_bot=True)
            await fake.user_says("two", channel=GENERAL2, mention_bot=True)
            await until(lambda: bool(_answers(fake, GENERAL) and _answers(fake, GENERAL2)),
                        "both guilds answered")

            victim = holders[SHARD[GENERAL]]
            survivor = holders[SHARD[GENERAL2]]
            rs.kill9(victim)
            await rs.wait(victim)
            # nobody receives for the first guild's shard until its lease has moved
            await fake.user_says("while moving", channel=GENERAL, mention_bot=True)
            await until(lambda: len(_answers(fake, GENERAL)) >= 2,
                        "the message posted while the shard moved answered", timeout=30)
            assert await _holders(rs) == [survivor, survivor]

            await rs.start(victim)  # back: the survivor gives one shard up to it
            await _wait_spread(rs, fake, "the shards spread again")
            await fake.user_says("three", channel=GENERAL, mention_bot=True)
            await fake.user_says("four", channel=GENERAL2, mention_bot=True)
            await until(lambda: len(_answers(fake, GENERAL)) >= 3
                        and len(_answers(fake, GENERAL2)) >= 2, "both guilds answered again")
            await asyncio.sleep(1.0)  # a second answer would show by now
            assert _answers(fake, GENERAL) == ["echo: one", "echo: while moving",
                                               "echo: three"]
            assert _answers(fake, GENERAL2) == ["echo: two", "echo: four"]
        finally:
            await rs.stop_all()
