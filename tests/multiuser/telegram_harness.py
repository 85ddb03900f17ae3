"""Two Telegram users and one group, through the fake Bot API and the real runner in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.telegram.adapter import TelegramAdapter
from gateway.runner import GatewayRunner
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway.runtime_harness import runner_for
from tests.multiuser.support import until
from tests.telegram.fake_bot_api import USER, BotMsg, FakeBotApi

__all__ = ["ADA", "BOB", "Group", "group_gateway"]

ADA: dict[str, Any] = dict(USER)  # id 4242
BOB: dict[str, Any] = {"id": 5353, "is_bot": False, "first_name": "Bob", "username": "bob"}


@dataclass
class Group:
    api: FakeBotApi
    runner: GatewayRunner
    group: str
    ada_dm: str
    bob_dm: str

    async def say(self, chat: str, who: dict[str, Any], text: str, *, replies: int = 1,
                  **kw: Any) -> list[BotMsg]:
        """`who` writes `text` in `chat`; returns the bot's messages there once `replies` more
        arrived (their final versions)."""
        before = len(self.api.bot_messages(chat))
        self.api.send_user(chat, text, user=who, **kw)
        await until(lambda: len(self.api.bot_messages(chat)) >= before + replies,
                    f"{replies} bot message(s) in {chat} after {text!r}")
        return self.api.bot_messages(chat)[before:]

    async def command(self, chat: str, who: dict[str, Any], text: str) -> str:
        """The bot's answer to a slash command (one notice)."""
        return (await self.say(chat, who, text))[-1].text

    async def turn(self, chat: str, who: dict[str, Any], text: str, final: str,
                   timeout_s: float = 10.0, **kw: Any) -> None:
        """`who` writes `text`; wait until the bot's reply reads `final` (notes may follow)."""
        before = len(self.api.bot_messages(chat))
        self.api.send_user(chat, text, user=who, **kw)
        await until(lambda: any(m.text == final or m.text.startswith(final + "\n")
                                for m in self.api.bot_messages(chat)[before:]),
                    f"the reply {final!r} in {chat}", timeout_s)


@asynccontextmanager
async def group_gateway(home: Path, model: FakeOpenAIServer, **overrides: Any
                        ) -> AsyncIterator[Group]:
    """Ada (admin) and Bob (member) are allowed; the bot answers in the group unmentioned."""
    async with FakeBotApi() as api:
        adapter = TelegramAdapter("telegram", api.settings(
            poll_timeout_s=1, require_mention=False,
            allowed_users=[str(ADA["id"]), str(BOB["id"])]))
        overrides.setdefault("compression__enabled", False)
        async with runner_for(home, model, adapters={"telegram": adapter},
                              **overrides) as (runner, _):
            yield Group(api, runner, api.group_chat(), api.private_chat(ADA["id"]),
                        api.private_chat(BOB["id"]))
