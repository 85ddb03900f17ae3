"""`platforms.discord.shards: 2` on one gateway (SQLite): the process runs both shards.

`hermes gateway run` (subprocess) against the fake Discord, which routes each guild's events
only to the shard `(guild_id >> 22) % count` as Discord does: a message in each of two guilds
on different shards is answered, and the fake saw one IDENTIFY per shard.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.discord.fake_discord import FakeDiscord
from tests.discord.fake_gateway import shard_of
from tests.discord.fake_payloads import ALICE, DM_ALICE, GENERAL, GENERAL2, GUILD, GUILD2
from tests.fakes.gateway_process import gateway_process, until
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.timeout(60)


def _write_config(home: Path, model: FakeOpenAIServer, fake: FakeDiscord) -> None:
    config = {
        "providers": {"main": {"base_url": model.base_url, "api_keys": ["sk-test-key-1"],
                               "model": "fake-model", "context_length": 32000,
                               "timeout_s": 30, "max_retries": 0}},
        "gateway": {"allowed_users": [str(ALICE)], "drain_timeout_s": 1,
                    "streaming": {"edit_interval_s": 0.05}, "health": {"port": 0}},
        "compression": {"enabled": False},
        "logging": {"file": {"enabled": False}},
        "platforms": {"discord": {"enabled": True, "token": fake.token, "shards": 2,
                                  "reidentify_delay_s": 0.2, "guild_ready_timeout_s": 0.2,
                                  "api_base_url": fake.api_base_url,
                                  "gateway_url": fake.gateway_url}},
    }
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(config))


def _answers(fake: FakeDiscord, channel: int) -> list[str]:
    return [m.content for m in fake.bot_messages(channel) if m.content.startswith("echo:")]


async def test_one_gateway_runs_every_shard_and_answers_each_guild(tmp_path: Path) -> None:
    assert shard_of(GUILD, 2) != shard_of(GUILD2, 2)  # the two guilds are on different shards
    home = tmp_path / "home"
    # a token of its own: the machine-wide token lock keeps one gateway per bot token
    async with FakeOpenAIServer() as model, FakeDiscord(token="fake-discord-shards") as fake:
        fake.gateway.recommended_shards = 2
        _write_config(home, model, fake)
        async with gateway_process(home):
            await until(lambda: fake.gateway.live_shards() == {(0, 2), (1, 2)},
                        "both shards to IDENTIFY", log=home / "stderr.log")
            await fake.user_says("hello from guild one", channel=GENERAL, mention_bot=True)
            await fake.user_says("hello from guild two", channel=GENERAL2, mention_bot=True)
            await fake.user_says("hello in a DM", channel=DM_ALICE)
            await until(lambda: bool(_answers(fake, GENERAL) and _answers(fake, GENERAL2)
                                     and _answers(fake, DM_ALICE)),
                        "an answer in each guild and the DM", log=home / "stderr.log")
        assert _answers(fake, GENERAL) == ["echo: hello from guild one"]
        assert _answers(fake, GENERAL2) == ["echo: hello from guild two"]
        assert _answers(fake, DM_ALICE) == ["echo: hello in a DM"]
        assert sorted(fake.gateway.identified_shards()) == [(0, 2), (1, 2)]
