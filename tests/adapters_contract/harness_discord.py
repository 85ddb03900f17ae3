"""Contract harness for Discord: the real `DiscordAdapter` (unmodified discord.py) against the
fake Discord REST API + gateway websocket in tests/discord/fake_discord.py."""

from __future__ import annotations

import asyncio
import contextlib
import mimetypes
from pathlib import Path

import structlog

from adapters.discord import SPEC
from adapters.discord.adapter import DiscordAdapter
from gateway.events import InteractionEvent, MessageEvent
from gateway.ports import AdapterContext
from gateway.supervision_types import MemoryCursorStore as MemoryCursors
from tests.adapters_contract.protocol import BotMessage
from tests.discord.fake_discord import FakeDiscord
from tests.discord.fake_payloads import (
    BOT,
    DM_ALICE,
    GENERAL,
    LATE_THREAD,
    THREAD,
    StoredMessage,
)

__all__ = ["DiscordHarness", "make_harness"]

#: thread channel -> parent channel, as the fake's guild has them
PARENTS = {THREAD: GENERAL, LATE_THREAD: GENERAL}


class DiscordHarness:
    platform = "discord"
    dm_chat = str(DM_ALICE)
    group_chat = str(GENERAL)
    #: a thread of `group_chat` that the fake guild announces (used by the contract suite)
    sample_thread = str(THREAD)

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.fake = FakeDiscord()
        self.adapter: DiscordAdapter
        self.emitted: list[MessageEvent] = []
        self.interactions: list[InteractionEvent] = []
        self.emit_calls = 0
        #: texts whose next emit fails (the gateway could not record them: storage full)
        self.fail_once: set[str] = set()
        self._seen: set[tuple[str, str]] = set()
        self._connected = asyncio.Event()
        self._changed = asyncio.Condition()
        self._ctx: AdapterContext | None = None
        self._task: asyncio.Task[None] | None = None
        self._last: StoredMessage | None = None
        self.progress_calls = 0

    async def __aenter__(self) -> DiscordHarness:
        await self.fake.start()
        self.adapter = SPEC.create("discord", self.fake.settings(guild_ready_timeout_s=0.05))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._ctx is not None:
            self._ctx.stop_event.set()
        await self.adapter.stop()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 10)
        await self.fake.stop()

    async def _emit(self, event: MessageEvent) -> bool:
        self.emit_calls += 1
        if event.text in self.fail_once:
            self.fail_once.discard(event.text)
            raise RuntimeError("database or disk is full")
        key = (event.platform, event.event_id)
        if key in self._seen:
            return False
        self._seen.add(key)
        self.emitted.append(event)
        async with self._changed:
            self._changed.notify_all()
        return True

    def _progress(self) -> None:
        self.progress_calls += 1

    async def _interact(self, event: InteractionEvent) -> bool:
        key = (event.platform, f"interaction:{event.event_id}")
        if key in self._seen:
            return False
        self._seen.add(key)
        self.interactions.append(event)
        async with self._changed:
            self._changed.notify_all()
        return True

    def context(self) -> AdapterContext:
        if self._ctx is None:
            self._ctx = AdapterContext(
                name="discord", emit=self._emit, progress=self._progress,
                stop_event=asyncio.Event(), cursors=MemoryCursors(),
                cache_dir=self.tmp_path / "cache", logger=structlog.get_logger("test.discord"),
                connected=self._connected.set, max_attachment_bytes=1024 * 1024,
                interact=self._interact,
            )
        return self._ctx

    async def start(self) -> None:
        self._task = asyncio.create_task(self.adapter.start(self.context()), name="discord")
        waiter = asyncio.create_task(self._connected.wait())
        done, _ = await asyncio.wait({waiter, self._task}, timeout=15,
                                     return_when=asyncio.FIRST_COMPLETED)
        if self._task in done:
            waiter.cancel()
            self._task.result()
            raise RuntimeError("adapter stopped before connecting")
        if waiter not in done:
            waiter.cancel()
            raise TimeoutError("adapter did not connect")

    async def user_says(
        self, text: str, *, chat: str | None = None, group: bool = False,
        thread: str | None = None, mention: bool = False,
        reply_to_bot_message: str | None = None, attachment: Path | None = None,
        redeliver: bool = False,
    ) -> None:
        if redeliver:
            assert self._last is not None, "nothing to redeliver"
            await self.fake.redeliver(self._last)
            return
        if thread:
            channel = int(thread)
        elif chat:
            channel = int(chat)
        else:
            channel = GENERAL if group else DM_ALICE
        file = None
        if attachment is not None:
            mime = mimetypes.guess_type(attachment.name)[0] or "application/octet-stream"
            file = (attachment.name, await asyncio.to_thread(attachment.read_bytes), mime)
        self._last = await self.fake.user_says(
            text, channel=channel, mention_bot=mention,
            reply_to=int(reply_to_bot_message) if reply_to_bot_message else None,
            attachment=file,
        )

    async def wait_emitted(self, n: int, timeout_s: float = 5.0) -> list[MessageEvent]:
        async def reach() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: len(self.emitted) >= n)

        await asyncio.wait_for(reach(), timeout_s)
        return list(self.emitted)

    def bot_messages(self, chat: str) -> list[BotMessage]:
        out: list[BotMessage] = []
        for m in self.fake.messages.values():
            if m.author_id != BOT or m.deleted:
                continue
            parent = PARENTS.get(m.channel_id)
            if str(m.channel_id) != chat and str(parent) != chat:
                continue
            out.append(BotMessage(
                message_id=str(m.id), chat_id=str(parent or m.channel_id), text=m.content,
                thread_id=str(m.channel_id) if parent else None,
                reply_to=str(m.reference) if m.reference else None, edits=m.edits,
                attachments=[a["filename"] for a in m.attachments],
            ))
        return out

    def typing_calls(self, chat: str) -> int:
        return sum(n for cid, n in self.fake.typing.items()
                   if str(cid) == chat or str(PARENTS.get(cid)) == chat)

    def rate_limit_next_send(self, retry_after_s: float) -> None:
        self.fake.rate_limit_next(retry_after_s)

    async def drop_connection(self) -> None:
        await self.fake.drop_connection()


async def make_harness(tmp_path: Path) -> DiscordHarness:
    return DiscordHarness(tmp_path)
