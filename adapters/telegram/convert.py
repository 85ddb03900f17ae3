"""Turn a Telegram `Update` into a `MessageEvent` (no I/O: downloads live in `media.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from telegram import Message, MessageEntity, Update

from gateway.events import (
    Attachment,
    ChatType,
    InteractionEvent,
    MessageEvent,
    SkippedFile,
    UserRef,
)

__all__ = ["BotIdentity", "FileRef", "button_data", "files_of", "inbound_message",
           "to_event", "to_interaction", "with_entities"]

#: Telegram's limit on a button's `callback_data`, in bytes.
MAX_CALLBACK_DATA = 64

Kind = Literal["image", "audio", "voice", "video", "document", "other"]

_CHAT_TYPES = {
    "private": ChatType.DM,
    "group": ChatType.GROUP,
    "supergroup": ChatType.GROUP,
    "channel": ChatType.CHANNEL,
}


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who the bot is (from getMe): used to detect mentions, replies to it and its own posts."""

    id: int
    username: str

    def is_me(self, user_id: int | None) -> bool:
        return user_id is not None and user_id == self.id


@dataclass(frozen=True, slots=True)
class FileRef:
    """An attachment of an inbound message that still has to be downloaded."""

    file_id: str
    unique_id: str
    kind: Kind
    name: str
    mime: str | None
    size: int | None


def inbound_message(update: Update) -> Message | None:
    """The new message an update carries, or None (edits, callbacks, member updates...)."""
    return update.message


def files_of(message: Message) -> list[FileRef]:
    """Photos (largest size only), documents, voice notes, audio and video of `message`."""
    out: list[FileRef] = []
    if message.photo:
        p = message.photo[-1]
        out.append(FileRef(p.file_id, p.file_unique_id, "image", "photo.jpg", "image/jpeg",
                           p.file_size))
    if message.document:
        d = message.document
        kind: Kind = "image" if (d.mime_type or "").startswith("image/") else "document"
        out.append(FileRef(d.file_id, d.file_unique_id, kind, d.file_name or "document",
                           d.mime_type, d.file_size))
    if message.voice:
        v = message.voice
        out.append(FileRef(v.file_id, v.file_unique_id, "voice", "voice.ogg",
                           v.mime_type or "audio/ogg", v.file_size))
    if message.audio:
        a = message.audio
        out.append(FileRef(a.file_id, a.file_unique_id, "audio", a.file_name or "audio",
                           a.mime_type, a.file_size))
    if message.video:
        vd = message.video
        out.append(FileRef(vd.file_id, vd.file_unique_id, "video", vd.file_name or "video.mp4",
                           vd.mime_type, vd.file_size))
    return out


def _mentions_bot(message: Message, me: BotIdentity) -> bool:
    name = "@" + me.username.lower()
    kinds: list[str | None] = [MessageEntity.MENTION, MessageEntity.TEXT_MENTION,
                               MessageEntity.BOT_COMMAND]
    found = {**message.parse_entities(kinds), **message.parse_caption_entities(kinds)}
    for entity, text in found.items():
        if entity.type == MessageEntity.MENTION and text.lower() == name:
            return True
        if entity.type == MessageEntity.TEXT_MENTION and entity.user is not None:
            if me.is_me(entity.user.id):
                return True
        if entity.type == MessageEntity.BOT_COMMAND and "@" in text:
            if "@" + text.split("@", 1)[1].lower() == name:
                return True
    return False


def _thread_id(message: Message) -> str | None:
    # Only forum topics are threads. Replies in ordinary supergroups also carry a
    # message_thread_id; the General topic carries none (and must never be sent id 1).
    if message.is_topic_message and message.message_thread_id:
        return str(message.message_thread_id)
    return None


def _reply(message: Message, me: BotIdentity) -> tuple[str | None, bool]:
    target = message.reply_to_message
    if target is None or target.forum_topic_created is not None:
        return None, False  # in a topic, an implicit "reply" to the topic's creation message
    if message.is_topic_message and target.message_id == message.message_thread_id:
        return None, False
    by_bot = target.from_user is not None and me.is_me(target.from_user.id)
    return str(target.message_id), by_bot


def _user(message: Message, me: BotIdentity) -> UserRef:
    u = message.from_user
    if u is not None:
        name = u.username or u.full_name or None
        return UserRef(id=str(u.id), name=name, is_bot=u.is_bot, is_self=me.is_me(u.id))
    sender = message.sender_chat or message.chat
    return UserRef(id=str(sender.id), name=sender.title or sender.username or None)


def to_event(
    platform: str,
    update: Update,
    message: Message,
    me: BotIdentity,
    *,
    attachments: tuple[Attachment, ...] = (),
    skipped: tuple[SkippedFile, ...] = (),
) -> MessageEvent:
    """Normalize one inbound message. Captions become the text; files that were not
    downloaded are `skipped` (the gateway tells the user and the model). Link targets and code the plain text would lose are
    written back as Markdown (`with_entities`); the text is otherwise left as sent
    (`/cmd@otherbot` included: commands addressed to another bot simply don't count as a
    mention)."""
    if message.text:
        text = with_entities(message.text, message.entities)
    else:
        text = with_entities(message.caption or "", message.caption_entities)
    reply_to, reply_to_bot = _reply(message, me)
    return MessageEvent(
        platform=platform,
        event_id=str(update.update_id),
        chat_id=str(message.chat.id),
        chat_type=_CHAT_TYPES.get(message.chat.type, ChatType.GROUP),
        thread_id=_thread_id(message),
        user=_user(message, me),
        text=text,
        attachments=attachments,
        skipped=skipped,
        message_id=str(message.message_id),
        reply_to=reply_to,
        reply_to_bot=reply_to_bot,
        mentions_bot=_mentions_bot(message, me),
        timestamp=message.date.timestamp(),
        raw=update,
    )


def button_data(action: str, value: str) -> str:
    """A button's `callback_data`: `action|value`, cut to Telegram's 64 bytes."""
    return f"{action}|{value}".encode()[:MAX_CALLBACK_DATA].decode("utf-8", "ignore")


def to_interaction(platform: str, update: Update, me: BotIdentity) -> InteractionEvent | None:
    """A button press (`callback_query` on one of the bot's messages), or None when the
    update is none or carries no usable data (inline-mode and game callbacks)."""
    query = update.callback_query
    if query is None or not query.data or "|" not in query.data:
        return None
    message = query.message
    if not isinstance(message, Message):  # None, or too old to be accessible
        return None
    action, _, value = query.data.partition("|")
    u = query.from_user
    return InteractionEvent(
        platform=platform,
        event_id=str(update.update_id),
        chat_id=str(message.chat.id),
        chat_type=_CHAT_TYPES.get(message.chat.type, ChatType.GROUP),
        thread_id=_thread_id(message),
        user=UserRef(id=str(u.id), name=u.username or u.full_name or None, is_bot=u.is_bot,
                     is_self=me.is_me(u.id)),
        action=action,
        value=value,
        message_id=str(message.message_id),
        raw=update,
    )


_KEPT = (MessageEntity.TEXT_LINK, MessageEntity.CODE, MessageEntity.PRE)


def with_entities(text: str, entities: tuple[MessageEntity, ...] | None) -> str:
    """`text` with the formatting that carries meaning written back as Markdown.

    Telegram sends formatting as entities beside plain text, so the plain text alone loses
    the target of a hidden link and the boundaries (and language) of code. Those three are
    restored: `[text](url)`, `` `code` `` and fenced blocks. Bold, italics and the like change
    nothing the model needs and are left out. Offsets are in UTF-16 code units; nested
    entities inside one already restored are skipped."""
    chosen = sorted((e for e in entities or () if e.type in _KEPT and e.length > 0),
                    key=lambda e: (e.offset, -e.length))
    if not chosen:
        return text
    units = text.encode("utf-16-le")
    out: list[str] = []
    pos = 0
    for e in chosen:
        start, end = e.offset * 2, (e.offset + e.length) * 2
        if start < pos or end > len(units):
            continue
        out.append(units[pos:start].decode("utf-16-le", "replace"))
        body = units[start:end].decode("utf-16-le", "replace")
        out.append(_markdown(e, body))
        pos = end
    out.append(units[pos:].decode("utf-16-le", "replace"))
    return "".join(out)


def _markdown(entity: MessageEntity, body: str) -> str:
    if entity.type == MessageEntity.TEXT_LINK and entity.url:
        return f"[{body}]({entity.url})"
    if entity.type == MessageEntity.CODE:
        fence = "``" if "`" in body else "`"
        pad = " " if fence == "``" else ""
        return f"{fence}{pad}{body}{pad}{fence}"
    if entity.type == MessageEntity.PRE:
        ticks = "````" if "```" in body else "```"
        return f"{ticks}{entity.language or ''}\n{body.strip(chr(10))}\n{ticks}"
    return body
