"""Contract harness for Slack: the real `SlackAdapter` (unmodified slack-bolt / slack-sdk, Socket
Mode) against the fake Slack in tests/slack/fake_slack.py."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import mimetypes
from pathlib import Path

from adapters.slack import SPEC
from adapters.slack.adapter import SlackAdapter
from gateway.events import MessageEvent
from gateway.ports import AdapterContext
from tests.adapters_contract.protocol import BotMessage
from tests.slack.fake_slack import FakeSlack
from tests.slack.recorder import Recorder

__all__ = ["SlackHarness", "make_harness"]


class SlackHarness:
    platform = "slack"
    dm_chat = "D0001"
    group_chat = "C0001"
    #: the root ts of a thread in `group_chat` (Slack threads are keyed by their root's ts)
    thread = "1600000000.000100"
    sample_thread = thread
    #: contract cases that do not apply to Slack, with the reason
    unsupported = {"typing": "Slack has no typing indicator for bots posting with "
                             "chat.postMessage; the adapter declares typing=False"}

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.fake = FakeSlack()
        self.adapter: SlackAdapter
        self.rec = Recorder(tmp_path / "cache")
        self._ctx: AdapterContext | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def emitted(self) -> list[MessageEvent]:
        return self.rec.emitted

    async def __aenter__(self) -> SlackHarness:
        for name in ("adapters.slack.sdk", "adapters.slack.bolt"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        await self.fake.start()
        self.adapter = SPEC.create("slack", {
            "bot_token": self.fake.bot_token, "app_token": self.fake.app_token,
            "api_base_url": self.fake.api_url, "ping_interval_s": 0.3, "timeout_s": 5})
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.adapter.stop()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 10)
        await self.fake.stop()

    def context(self) -> AdapterContext:
        if self._ctx is None:
            self._ctx = self.rec.context("slack")
            self._ctx.max_attachment_bytes = 1024 * 1024
        return self._ctx

    async def start(self) -> None:
        self._task = asyncio.create_task(self.adapter.start(self.context()), name="slack")
        for _ in range(500):
            if self.rec.connects or self._task.done():
                break
            await asyncio.sleep(0.02)
        if self._task.done():
            self._task.result()
            raise RuntimeError("adapter stopped before connecting")
        if not self.rec.connects:
            raise TimeoutError("adapter did not connect")

    async def user_says(
        self, text: str, *, chat: str | None = None, group: bool = False,
        thread: str | None = None, mention: bool = False,
        reply_to_bot_message: str | None = None, attachment: Path | None = None,
        redeliver: bool = False,
    ) -> None:
        if redeliver:
            await self.fake.redeliver_last()
            return
        channel = chat or (self.group_chat if group or thread else self.dm_chat)
        parent_user: str | None = "U0001" if thread else None
        if reply_to_bot_message is not None:
            bot_msg = next(m for msgs in self.fake.posted.values() for m in msgs
                           if m.ts == reply_to_bot_message)
            channel, thread = bot_msg.channel, bot_msg.thread_ts or bot_msg.ts
            parent_user = self.fake.bot_user_id if bot_msg.thread_ts is None else "U0001"
        files = None
        if attachment is not None:
            mime = mimetypes.guess_type(attachment.name)[0] or "application/octet-stream"
            data = await asyncio.to_thread(attachment.read_bytes)
            files = [self.fake.add_file(attachment.name, data, mime)]
        await self.fake.user_message(text, channel=channel, thread_ts=thread, mention=mention,
                                     files=files, parent_user_id=parent_user)

    async def wait_emitted(self, n: int, timeout_s: float = 5.0) -> list[MessageEvent]:
        return await self.rec.wait_emitted(n, timeout_s)

    def bot_messages(self, chat: str) -> list[BotMessage]:
        return [
            BotMessage(message_id=m.ts, chat_id=m.channel, text=m.text, thread_id=m.thread_ts,
                       reply_to=m.thread_ts, edits=len(m.history) - 1, attachments=list(m.files))
            for m in self.fake.bot_messages(chat)
        ]

    def typing_calls(self, chat: str) -> int:
        return 0

    def rate_limit_next_send(self, retry_after_s: float) -> None:
        self.fake.rate_limit_next(retry_after_s)

    async def drop_connection(self) -> None:
        await self.fake.drop()


async def make_harness(tmp_path: Path) -> SlackHarness:
    return SlackHarness(tmp_path)
