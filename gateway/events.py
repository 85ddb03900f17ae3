"""Platform-neutral message types exchanged between adapters and the gateway.

Adapters build `MessageEvent`s from wire traffic and receive `OutboundMessage`s to send. These
models carry no behaviour; they import only the standard library and pydantic.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Attachment",
    "AttachmentKind",
    "Button",
    "ChatType",
    "ErrorKind",
    "InteractionEvent",
    "MessageEvent",
    "OutboundAttachment",
    "OutboundMessage",
    "Principal",
    "SendResult",
    "SkippedFile",
    "UserRef",
]


class ChatType(StrEnum):
    DM = "dm"
    GROUP = "group"
    CHANNEL = "channel"
    THREAD = "thread"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is acting: a user of one platform (an API key is a user of the `api` platform).

    Everything a user may see or change (sessions, memory about them, their workspace) is
    keyed by it; the gateway derives safe folder names from it (`gateway.principals`)."""

    platform: str
    user_id: str


class UserRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    name: str | None = None
    is_bot: bool = False
    is_self: bool = False


AttachmentKind = Literal["image", "audio", "voice", "video", "document", "other"]


class Attachment(BaseModel):
    """An inbound file, already downloaded into the profile cache by the adapter."""

    model_config = ConfigDict(frozen=True)

    path: str
    kind: AttachmentKind = "other"
    mime: str | None = None
    name: str | None = None
    size: int = 0


class SkippedFile(BaseModel):
    """An inbound file the adapter did not download: too large, over the message's total,
    refused host, timed out or failed. The gateway tells the user and the model (`reason` is
    a few words safe to show, never a URL or a token)."""

    model_config = ConfigDict(frozen=True)

    name: str
    reason: str


class MessageEvent(BaseModel):
    """One inbound user message, normalized.

    `event_id` is the platform's delivery identity used for durable dedup (Telegram
    `update_id`, Slack `event_id`, Discord message id). `message_id` is the id of the message
    itself, used to anchor replies. `raw` is a reference for debugging and is never persisted.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    platform: str
    event_id: str
    chat_id: str
    chat_type: ChatType = ChatType.DM
    thread_id: str | None = None
    user: UserRef
    text: str = ""
    attachments: tuple[Attachment, ...] = ()
    #: Files of the message that were not downloaded, with why (the message still goes).
    skipped: tuple[SkippedFile, ...] = ()
    message_id: str | None = None
    reply_to: str | None = None
    reply_to_bot: bool = False
    mentions_bot: bool = False
    timestamp: float = Field(default_factory=time.time)
    raw: Any = Field(default=None, exclude=True, repr=False)

    @property
    def is_group(self) -> bool:
        return self.chat_type is not ChatType.DM

    @property
    def principal(self) -> Principal:
        """The sender: platform + user id."""
        return Principal(self.platform, self.user.id)


class InteractionEvent(BaseModel):
    """A press on a button the bot sent (a Telegram callback query, a Slack block action, a
    Discord component interaction). `action` and `value` are the button's (`Button`);
    `event_id` is the platform's id of the press, deduplicated like a message's;
    `message_id` the bot message that carried the button. The gateway handles it like a
    message of `user` in that chat: the same dedup, authorization and command rules."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    platform: str
    event_id: str
    chat_id: str
    chat_type: ChatType = ChatType.DM
    thread_id: str | None = None
    user: UserRef
    action: str
    value: str = ""
    message_id: str | None = None
    timestamp: float = Field(default_factory=time.time)
    raw: Any = Field(default=None, exclude=True, repr=False)

    @property
    def principal(self) -> Principal:
        return Principal(self.platform, self.user.id)


class Button(BaseModel):
    """A button under a bot message; pressing it comes back as an `InteractionEvent` with
    the same `action` and `value`. Platforms without buttons show the text alone (which
    always says how to answer with a command)."""

    model_config = ConfigDict(frozen=True)

    label: str
    action: str
    value: str = ""


class OutboundAttachment(BaseModel):
    """A file to send. The gateway checks it when the reply is recorded (`path` is then the
    file's real path, `root` the allowed folder it lies in) and again when it reads the file
    for sending; the adapter gets the bytes read then (`data`, never stored) and sends those
    rather than opening `path` itself (`gateway.ports.attachment_bytes`)."""

    model_config = ConfigDict(frozen=True)

    path: str
    as_document: bool = False
    as_voice: bool = False
    root: str | None = None
    data: bytes | None = Field(default=None, exclude=True, repr=False)


class OutboundMessage(BaseModel):
    """Text (already converted to the adapter's dialect unless `formatted` is False)."""

    model_config = ConfigDict(frozen=True)

    chat_id: str
    text: str = ""
    thread_id: str | None = None
    reply_to: str | None = None
    formatted: bool = True
    attachments: tuple[OutboundAttachment, ...] = ()
    buttons: tuple[Button, ...] = ()
    #: a part of a final reply: "<outbox id>.<part index>". Adapters attach it where the
    #: platform keeps it (Slack message metadata, Discord's deduplicating nonce) so that start-up
    #: recovery can tell a reply that went out just before a crash (`already_delivered`).
    delivery_key: str | None = None


class ErrorKind(StrEnum):
    TOO_LONG = "too_long"
    BAD_FORMAT = "bad_format"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    RATE_LIMITED = "rate_limited"
    TRANSIENT = "transient"
    TIMEOUT = "timeout"
    NOT_MODIFIED = "not_modified"
    UNKNOWN = "unknown"


class SendResult(BaseModel):
    """What a send / edit produced. Adapters return errors here instead of raising."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    message_ids: tuple[str, ...] = ()
    error_kind: ErrorKind | None = None
    retry_after: float | None = None
    error: str | None = None

    @classmethod
    def success(cls, *ids: str) -> SendResult:
        return cls(ok=True, message_ids=tuple(str(i) for i in ids))

    @classmethod
    def failure(
        cls, kind: ErrorKind, error: str | None = None, *, retry_after: float | None = None
    ) -> SendResult:
        return cls(ok=False, error_kind=kind, error=error, retry_after=retry_after)
