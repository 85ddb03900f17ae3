"""Slack event payloads → `MessageEvent`s (pure functions, no I/O).

Decisions (see docs/platforms/slack.md):
- Identity: `event_id` is `"{channel}:{ts}"`, the message's own identity, not Slack's envelope
  `event_id`. A channel mention arrives twice (`message` and `app_mention`, two envelope ids)
  and a redelivery repeats one of them: all of them carry the same channel and ts, so the
  gateway's durable dedup lets exactly one through.
- Threads: `thread_id` is the thread's root ts. A top-level message in a channel starts a
  thread (its own ts is the thread id), so the reply lands in that thread and later replies
  in the thread continue the same session. Top-level DMs stay unthreaded.
- A thread reply is addressed to the bot (`reply_to_bot`) when the thread's root was posted
  by the bot or the bot already answered in that thread.
- Dropped: the bot's own messages, edits/deletes/joins and other non-text subtypes, empty
  messages. Other bots' messages are emitted with `is_bot=True` (the gateway ignores them).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gateway.events import ChatType, MessageEvent, UserRef

__all__ = [
    "BotIdentity",
    "TEXT_SUBTYPES",
    "chat_type_for",
    "clean_text",
    "event_identity",
    "normalize",
]

#: Message subtypes that carry something a user said; everything else is ignored.
TEXT_SUBTYPES = frozenset({"file_share", "thread_broadcast", "me_message", "bot_message"})

_CHANNEL_TYPES = {
    "im": ChatType.DM,
    "mpim": ChatType.GROUP,
    "group": ChatType.CHANNEL,
    "channel": ChatType.CHANNEL,
}

_ANGLE = re.compile(r"<([^<>]*)>")


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who the bot is, from `auth.test`."""

    user_id: str
    bot_id: str = ""
    team_id: str = ""

    def is_self(self, event: Mapping[str, Any]) -> bool:
        if self.user_id and event.get("user") == self.user_id:
            return True
        return bool(self.bot_id) and event.get("bot_id") == self.bot_id


def chat_type_for(channel_type: str | None, channel_id: str) -> ChatType:
    """Slack's `channel_type` (im, mpim, group, channel) → ChatType; falls back to the id's
    prefix (D… is a DM) when the event did not say (app_mention events do not)."""
    if channel_type in _CHANNEL_TYPES:
        return _CHANNEL_TYPES[channel_type]
    return ChatType.DM if channel_id.startswith("D") else ChatType.CHANNEL


def event_identity(channel: str, ts: str) -> str:
    return f"{channel}:{ts}"


def _render_token(token: str, bot_user_id: str) -> str:
    target, _, label = token.partition("|")
    if target.startswith("@"):
        if target[1:] == bot_user_id:
            return ""
        return "@" + (label or target[1:])
    if target.startswith("#"):
        return "#" + (label or target[1:])
    if target.startswith("!"):
        name = target[1:].split("^", 1)[0]
        return label or "@" + name
    if target.startswith("mailto:"):
        return label or target[len("mailto:"):]
    if label and label != target:
        return f"{label} ({target})"
    return target


def clean_text(text: str, bot_user_id: str, commands: Iterable[str] = ()) -> str:
    """Slack message markup → plain text for the agent: the bot's own mention removed, other
    mentions, channels and links made readable, HTML entities decoded, and a leading
    `!cmd` rewritten to `/cmd` for known commands (Slack's client eats a leading `/`)."""
    out = _ANGLE.sub(lambda m: _render_token(m.group(1), bot_user_id), text)
    out = html.unescape(out)
    out = re.sub(r"[ \t]{2,}", " ", out).strip()
    if out.startswith("!"):
        word = out[1:].split(maxsplit=1)[0].lower() if len(out) > 1 else ""
        if word and word in set(commands):
            out = "/" + out[1:]
    return out


def mentions(text: str, bot_user_id: str) -> bool:
    return bool(bot_user_id) and (
        f"<@{bot_user_id}>" in text or f"<@{bot_user_id}|" in text
    )


def normalize(
    platform: str,
    event: Mapping[str, Any],
    *,
    identity: BotIdentity,
    chat_type: ChatType,
    mention_event: bool = False,
    bot_in_thread: bool = False,
    user_name: str | None = None,
    commands: Iterable[str] = (),
) -> MessageEvent | None:
    """One `message` / `app_mention` event → a MessageEvent, or None when it must be ignored.

    Attachments are not filled in here (the adapter downloads `event["files"]` and adds them).
    Must not raise for odd payloads: missing fields make the event ignored.
    """
    subtype = event.get("subtype")
    if subtype is not None and subtype not in TEXT_SUBTYPES:
        return None
    if event.get("hidden") or identity.is_self(event):
        return None
    channel, ts = event.get("channel"), event.get("ts")
    user_id = event.get("user") or event.get("bot_id")
    if not isinstance(channel, str) or not isinstance(ts, str) or not user_id:
        return None
    raw_text = event.get("text") or ""
    if not isinstance(raw_text, str):
        return None
    files = [f for f in event.get("files") or () if isinstance(f, Mapping)]
    if not raw_text.strip() and not files:
        return None
    is_bot = bool(event.get("bot_id")) or subtype == "bot_message"
    thread_ts = event.get("thread_ts") if isinstance(event.get("thread_ts"), str) else None
    in_thread = thread_ts is not None and thread_ts != ts
    if thread_ts:
        thread_id: str | None = thread_ts
    else:
        thread_id = None if chat_type is ChatType.DM else ts
    reply_to_bot = in_thread and (
        event.get("parent_user_id") == identity.user_id or bot_in_thread
    )
    try:
        stamp = float(ts)
    except ValueError:
        return None
    return MessageEvent(
        platform=platform,
        event_id=event_identity(channel, ts),
        chat_id=channel,
        chat_type=chat_type,
        thread_id=thread_id,
        user=UserRef(id=str(user_id), name=user_name, is_bot=is_bot),
        text=clean_text(raw_text, identity.user_id, commands),
        message_id=ts,
        reply_to=thread_ts if in_thread else None,
        reply_to_bot=bool(reply_to_bot),
        mentions_bot=mention_event or mentions(raw_text, identity.user_id),
        timestamp=stamp,
        raw=event,
    )
