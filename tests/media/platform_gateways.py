"""The real gateway in-process with the real Slack or Discord adapter against its fake
platform, and the fake model: a user sends text and files, the test reads what the model
received and what the user saw in the chat."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from adapters.discord import SPEC as DISCORD
from adapters.slack import SPEC as SLACK
from tests.discord.fake_discord import FakeDiscord
from tests.discord.fake_payloads import ALICE, DM_ALICE
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway.runtime_harness import runner_for
from tests.multiuser.support import until
from tests.slack.fake_slack import FakeSlack

__all__ = ["ChatGateway", "File", "PLATFORMS", "chat_gateway"]

File = tuple[str, bytes, str]  # name, bytes, MIME type the platform reports
PLATFORMS = ("slack", "discord")


class ChatGateway(Protocol):
    platform: str
    fake: Any

    async def send(self, text: str, files: list[File] = ...) -> None: ...

    def bot_texts(self) -> list[str]: ...


@dataclass
class _Slack:
    fake: FakeSlack
    platform: str = "slack"
    chat: str = "D0001"

    async def send(self, text: str, files: list[File] | None = None) -> None:
        entries = [self.fake.add_file(name, data, mime) for name, data, mime in files or ()]
        await self.fake.user_message(text, channel=self.chat, files=entries or None)

    def bot_texts(self) -> list[str]:
        return [m.text for m in self.fake.bot_messages(self.chat)]


@dataclass
class _Discord:
    fake: FakeDiscord
    platform: str = "discord"

    async def send(self, text: str, files: list[File] | None = None) -> None:
        await self.fake.user_says(text, channel=DM_ALICE, attachments=list(files or ()))

    def bot_texts(self) -> list[str]:
        return [m.content for m in self.fake.bot_messages(DM_ALICE)]


@asynccontextmanager
async def chat_gateway(platform: str, home: Path, model: FakeOpenAIServer,
                       **overrides: Any) -> AsyncIterator[ChatGateway]:
    """The gateway with one adapter (`slack` or `discord`), connected; the user is allowed."""
    overrides.setdefault("compression__enabled", False)
    if platform == "slack":
        for name in ("adapters.slack.sdk", "adapters.slack.bolt"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        async with FakeSlack() as slack:
            adapter = SLACK.create("slack", {
                "bot_token": slack.bot_token, "app_token": slack.app_token,
                "api_base_url": slack.api_url, "ping_interval_s": 0.3, "timeout_s": 5,
                "allowed_users": ["U0001"]})
            async with runner_for(home, model, adapters={"slack": adapter}, **overrides):
                await until(lambda: bool(slack.live_sockets()), "the Slack socket")
                yield _Slack(slack)
        return
    async with FakeDiscord() as discord:
        adapter = DISCORD.create("discord", discord.settings(
            guild_ready_timeout_s=0.05, allowed_users=[str(ALICE)]))
        async with runner_for(home, model, adapters={"discord": adapter}, **overrides):
            yield _Discord(discord)
