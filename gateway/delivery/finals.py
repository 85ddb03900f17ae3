"""Where a reply goes, and a final reply on its way to the outbox: drafted (MEDIA lines
resolved into checked attachments), then recorded (with its outbox id) and sent."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from gateway.delivery.files import OutboundFiles
from gateway.events import MessageEvent, OutboundAttachment
from gateway.ports import BasePlatformAdapter
from hermes_common.text import extract_media
from storage.types import OutboxDraft

__all__ = ["DraftFinal", "PreparedFinal", "ReplyTarget", "draft_final"]


@dataclass(frozen=True, slots=True)
class PreparedFinal:
    target: ReplyTarget
    outbox_id: int
    body: str
    attachments: tuple[OutboundAttachment, ...] = ()


@dataclass(frozen=True, slots=True)
class DraftFinal:
    """A final reply ready to record: its outbox row, and what sending it needs."""

    row: OutboxDraft
    target: ReplyTarget
    body: str
    attachments: tuple[OutboundAttachment, ...] = ()

    def recorded(self, outbox_id: int) -> PreparedFinal:
        return PreparedFinal(self.target, outbox_id, self.body, self.attachments)


@dataclass(frozen=True, slots=True)
class ReplyTarget:
    """Where a reply goes: the chat and thread the user spoke in, anchored to their message.
    `user_id` is the user answered (on the same platform), when known: the files a reply
    may attach and the tools of the turn are that user's."""

    adapter: str
    chat_id: str
    thread_id: str | None
    reply_to: str | None
    chat_type: str = "dm"
    user_id: str | None = None

    @classmethod
    def of(cls, event: MessageEvent) -> ReplyTarget:
        return cls(event.platform, event.chat_id, event.thread_id, event.message_id,
                   event.chat_type.value, event.user.id)


async def draft_final(target: ReplyTarget, text: str, *, files: OutboundFiles | None,
                      adapter: BasePlatformAdapter | None, boot_id: str,
                      session_id: str | None, preview_message_id: str | None = None
                      ) -> DraftFinal:
    """A final reply's MEDIA lines resolved (each file checked against what this chat's user
    may send; a refused one becomes a note in the text) and its outbox row drafted, with the
    boot's claim. Nothing is written."""
    body, media = extract_media(text)
    notes: list[str] = []
    allowed: list[OutboundAttachment] = []
    takes_files = adapter is None or adapter.capabilities.media
    for ref in media:
        checked = (await asyncio.to_thread(files.check, ref, target.adapter,
                                           target.chat_id, target.user_id)
                   if files is not None
                   else f"⚠️ Attachment not sent: {Path(ref.path).name}")
        if isinstance(checked, str):
            notes.append(checked)
            continue
        if not takes_files:
            notes.append(f"⚠️ Attachment not sent: {Path(ref.path).name} "
                         "(this chat takes no files)")
            continue
        allowed.append(checked)
    if notes:
        body = (body + "\n\n" + "\n".join(notes)).strip()
    row = OutboxDraft(
        platform=target.adapter, chat_id=target.chat_id, text=body,
        session_id=session_id, thread_id=target.thread_id, reply_to=target.reply_to,
        chat_type=target.chat_type, preview_message_id=preview_message_id,
        attachments=tuple(a.model_dump() for a in allowed), claimed_by=boot_id)
    return DraftFinal(row, target, body, tuple(allowed))
