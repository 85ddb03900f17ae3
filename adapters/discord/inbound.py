"""Turn discord.py `Message`s into `MessageEvent`s (fetching only, no dispatch policy).

Mention gating is the gateway's job: every guild message is emitted with `mentions_bot` /
`reply_to_bot` set. The bot's own messages are dropped here; other bots are marked `is_bot`.
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import discord

from gateway.events import (
    Attachment,
    AttachmentKind,
    ChatType,
    MessageEvent,
    SkippedFile,
    UserRef,
)
from gateway.ports import DownloadBudget, EventLogger

__all__ = ["Inbound", "MessageLog"]

_HANDLED_TYPES = (discord.MessageType.default, discord.MessageType.reply)
_MENTION = re.compile(r"<@!?(\d+)>( ?)")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class MessageLog:
    """A bounded map of recent message id -> channel id (bot messages and seen messages).

    Edits and deletes only receive the gateway's chat id, which for a thread is the parent
    channel; the map finds the thread the message really lives in.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self._items: OrderedDict[str, tuple[str, bool]] = OrderedDict()
        self._emitted: OrderedDict[str, None] = OrderedDict()
        self._capacity = capacity

    def mark_emitted(self, message_id: str) -> None:
        """Recently emitted ids: a replay in the same process is not emitted again (the
        gateway's durable dedup covers restarts)."""
        self._emitted[message_id] = None
        while len(self._emitted) > self._capacity:
            self._emitted.popitem(last=False)

    def was_emitted(self, message_id: str) -> bool:
        return message_id in self._emitted

    def remember(self, message_id: str, channel_id: str, *, own: bool) -> None:
        self._items[message_id] = (channel_id, own)
        self._items.move_to_end(message_id)
        while len(self._items) > self._capacity:
            self._items.popitem(last=False)

    def channel_of(self, message_id: str) -> str | None:
        item = self._items.get(message_id)
        return item[0] if item else None

    def is_own(self, message_id: str) -> bool:
        item = self._items.get(message_id)
        return bool(item and item[1])


def _kind(att: discord.Attachment) -> AttachmentKind:
    if att.is_voice_message():
        return "voice"
    mime = (att.content_type or "").split(";")[0]
    if mime.startswith("image/"):
        return "image"
    if mime.startswith("audio/"):
        return "audio"
    if mime.startswith("video/"):
        return "video"
    return "document"


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


class Inbound:
    """Normalizes messages for one running client. `to_event` must not raise for bad input."""

    def __init__(
        self,
        platform: str,
        client: discord.Client,
        *,
        cache_dir: Path,
        budget: Callable[[], DownloadBudget],
        log: MessageLog,
        logger: EventLogger,
        download_timeout_s: float = 60.0,
    ) -> None:
        self._platform = platform
        self._client = client
        self._cache_dir = cache_dir
        self._budget = budget
        self._timeout_s = download_timeout_s
        self._log = log
        self._logger = logger
        self._threads: dict[int, tuple[bool, str | None]] = {}

    async def to_event(self, message: discord.Message) -> MessageEvent | None:
        """The event for `message`, or None when it is ours or not a user message."""
        me = self._client.user
        bot_id = me.id if me is not None else None
        if message.type not in _HANDLED_TYPES or message.author.id == bot_id:
            return None
        chat_type, chat_id, thread_id = await self._where(message)
        self._log.remember(str(message.id), str(message.channel.id), own=False)
        reply_to, reply_to_bot = self._reply(message, bot_id)
        attachments, skipped = await self._download(message)
        return MessageEvent(
            platform=self._platform,
            event_id=str(message.id),
            chat_id=chat_id,
            chat_type=chat_type,
            thread_id=thread_id,
            user=UserRef(
                id=str(message.author.id),
                name=message.author.display_name,
                is_bot=message.author.bot,
            ),
            text=self._text(message, bot_id),
            attachments=attachments,
            skipped=skipped,
            message_id=str(message.id),
            reply_to=reply_to,
            reply_to_bot=reply_to_bot,
            mentions_bot=any(u.id == bot_id for u in message.mentions),
            timestamp=message.created_at.timestamp(),
            raw=message,
        )

    async def _where(self, message: discord.Message) -> tuple[ChatType, str, str | None]:
        channel = message.channel
        if isinstance(channel, discord.Thread):
            return ChatType.THREAD, str(channel.parent_id), str(channel.id)
        if message.guild is None and not getattr(channel, "guild_id", None):
            return ChatType.DM, str(channel.id), None
        if isinstance(channel, discord.PartialMessageable):
            is_thread, parent = await self._lookup(channel.id)
            if is_thread and parent:
                return ChatType.THREAD, parent, str(channel.id)
        return ChatType.GROUP, str(channel.id), None

    async def _lookup(self, channel_id: int) -> tuple[bool, str | None]:
        """Whether an uncached guild channel is a thread (REST lookup, remembered)."""
        if channel_id not in self._threads:
            try:
                fetched = await self._client.fetch_channel(channel_id)
            except (discord.HTTPException, discord.InvalidData) as exc:
                self._logger.warning("discord_channel_lookup_failed", error=type(exc).__name__)
                return False, None
            if isinstance(fetched, discord.Thread):
                self._threads[channel_id] = (True, str(fetched.parent_id))
            else:
                self._threads[channel_id] = (False, None)
        return self._threads[channel_id]

    def _reply(self, message: discord.Message, bot_id: int | None) -> tuple[str | None, bool]:
        ref = message.reference
        if ref is None or ref.message_id is None:
            return None, False
        target = str(ref.message_id)
        resolved = ref.resolved
        if isinstance(resolved, discord.Message):
            return target, resolved.author.id == bot_id
        return target, self._log.is_own(target)

    @staticmethod
    def _text(message: discord.Message, bot_id: int | None) -> str:
        names = {u.id: u.display_name for u in message.mentions}

        def swap(match: re.Match[str]) -> str:
            uid = int(match.group(1))
            if uid == bot_id:
                return ""
            return f"@{names[uid]}{match.group(2)}" if uid in names else match.group(0)

        return _MENTION.sub(swap, message.content).strip()

    async def _download(
        self, message: discord.Message
    ) -> tuple[tuple[Attachment, ...], tuple[SkippedFile, ...]]:
        """The message's files within the per-message budget, each within the download
        timeout; the others come back as `SkippedFile`s with the reason."""
        out: list[Attachment] = []
        skipped: list[SkippedFile] = []
        budget = self._budget()
        for att in message.attachments:
            why = budget.refusal(att.size)
            if why is None:
                try:
                    data = await asyncio.wait_for(att.read(), self._timeout_s)
                except TimeoutError:
                    why = f"the download took longer than {self._timeout_s:g} s"
                except (discord.HTTPException, OSError) as exc:
                    why = f"the download failed ({type(exc).__name__})"
                else:
                    why = budget.refusal(len(data))
            if why is not None:
                self._logger.warning("discord_attachment_skipped", size=att.size, reason=why)
                skipped.append(budget.skipped(att.filename, why))
                continue
            budget.take(len(data))
            name = _UNSAFE.sub("_", att.filename)[-100:] or "file"
            path = self._cache_dir / "discord" / f"{message.id}_{att.id}_{name}"
            await asyncio.to_thread(_write, path, data)
            out.append(
                Attachment(
                    path=str(path), kind=_kind(att), mime=att.content_type,
                    name=att.filename, size=len(data),
                )
            )
        return tuple(out), tuple(skipped)
