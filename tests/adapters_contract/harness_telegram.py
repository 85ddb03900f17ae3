"""Contract-suite harness for Telegram: the real adapter (unmodified PTB) against FakeBotApi."""

from __future__ import annotations

import asyncio
import logging
import math
from pathlib import Path
from typing import Any

import structlog

from adapters.telegram.adapter import TelegramAdapter
from gateway.events import MessageEvent
from gateway.ports import AdapterContext
from gateway.supervision_types import MemoryCursorStore as _Cursors
from tests.adapters_contract.protocol import BotMessage
from tests.telegram.fake_bot_api import FakeBotApi

__all__ = ["TelegramHarness", "make_harness"]


class TelegramHarness:
    platform = "telegram"
    #: a forum-topic id; the contract suite sends `thread=sample_thread`
    sample_thread = "4242"
    unsupported: dict[str, str] = {}

    def __init__(self, tmp_path: Path) -> None:
        self.api = FakeBotApi()
        self.tmp_path = tmp_path
        self.emitted: list[MessageEvent] = []
        self._seen: set[str] = set()
        self._changed = asyncio.Event()
        self._connected = asyncio.Event()
        self._last_update: dict[str, Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self.dm_chat = ""
        self.group_chat = ""
        self.adapter: TelegramAdapter
        self._ctx: AdapterContext

    async def __aenter__(self) -> TelegramHarness:
        await self.api.start()
        self.adapter = TelegramAdapter("telegram", self.api.settings(poll_timeout_s=1))
        self.dm_chat = self.api.private_chat()
        self.group_chat = self.api.forum_chat(-100555)
        self._ctx = AdapterContext(
            name="telegram", emit=self._emit, progress=lambda: None,
            stop_event=asyncio.Event(), cursors=_Cursors(), cache_dir=self.tmp_path / "cache",
            logger=structlog.wrap_logger(logging.getLogger("contract.telegram")),
            connected=self._connected.set)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._ctx.stop_event.set()
        await self.adapter.stop()
        if self._task is not None:
            await asyncio.wait({self._task}, timeout=5)
            if not self._task.done():
                self._task.cancel()
        await self.api.stop()

    def context(self) -> AdapterContext:
        return self._ctx

    async def _emit(self, event: MessageEvent) -> bool:
        if event.event_id in self._seen:
            return False
        self._seen.add(event.event_id)
        self.emitted.append(event)
        self._changed.set()
        return True

    async def start(self) -> None:
        self._task = asyncio.create_task(self.adapter.start(self._ctx))
        waiter = asyncio.ensure_future(self._connected.wait())
        await asyncio.wait({self._task, waiter}, timeout=5, return_when=asyncio.FIRST_COMPLETED)
        if self._task.done():
            self._task.result()
        assert self._connected.is_set(), "telegram adapter did not connect"

    async def user_says(
        self,
        text: str,
        *,
        chat: str | None = None,
        group: bool = False,
        thread: str | None = None,
        mention: bool = False,
        reply_to_bot_message: str | None = None,
        attachment: Path | None = None,
        redeliver: bool = False,
    ) -> None:
        if redeliver:
            assert self._last_update is not None
            self.api.redeliver(self._last_update)
            return
        target = chat or (self.group_chat if group or thread else self.dm_chat)
        if mention:
            text = f"@{self.api.bot_user['username']} {text}"
        kw: dict[str, Any] = {}
        if thread:
            kw["thread_id"] = int(thread)
        if reply_to_bot_message:
            kw["reply_to"] = int(reply_to_bot_message)
        if attachment is not None:
            kw["document"] = (attachment.name, attachment.read_bytes())
        self._last_update = self.api.send_user(target, text, **kw)

    async def wait_emitted(self, n: int, timeout_s: float = 5.0) -> list[MessageEvent]:
        async with asyncio.timeout(timeout_s):
            while len(self.emitted) < n:
                self._changed.clear()
                await self._changed.wait()
        return list(self.emitted)

    def bot_messages(self, chat: str) -> list[BotMessage]:
        return [BotMessage(message_id=str(m.message_id), chat_id=m.chat_id, text=m.text,
                           thread_id=None if m.thread_id is None else str(m.thread_id),
                           reply_to=None if m.reply_to is None else str(m.reply_to),
                           edits=m.edits, attachments=[m.filename] if m.filename else [])
                for m in self.api.bot_messages(chat)]

    def typing_calls(self, chat: str) -> int:
        return sum(n for (c, _), n in self.api.typing.items() if c == chat)

    def rate_limit_next_send(self, retry_after_s: float) -> None:
        self.api.rate_limit_next(max(1, math.ceil(retry_after_s)))

    async def drop_connection(self) -> None:
        await self.api.drop_connections()


async def make_harness(tmp_path: Path) -> TelegramHarness:
    return TelegramHarness(tmp_path)
