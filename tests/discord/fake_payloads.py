"""JSON shapes of Discord API v10 objects used by the fake Discord (users, guilds, messages)."""

from __future__ import annotations

import datetime as dt
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ALICE",
    "CAROL",
    "BOB_BOT",
    "BOT",
    "DM_ALICE",
    "DM_BLOCKED",
    "GENERAL",
    "GENERAL2",
    "GUILD",
    "GUILD2",
    "GUILDS",
    "LATE_THREAD",
    "THREAD",
    "Snowflakes",
    "StoredMessage",
    "channel_json",
    "guild_json",
    "user_json",
]

DISCORD_EPOCH_MS = 1420070400000

BOT = 900000000000000001
ALICE = 900000000000000002
BOB_BOT = 900000000000000003
CAROL = 900000000000000004
GUILD = 900000000000000010
GENERAL = 900000000000000011
THREAD = 900000000000000012
#: A thread the gateway never announced (no GUILD_CREATE / THREAD_CREATE entry).
LATE_THREAD = 900000000000000013
DM_ALICE = 900000000000000020
#: A DM channel whose user blocked the bot: sends answer 403 / 50007.
DM_BLOCKED = 900000000000000021
#: A second guild on the other shard of two: (GUILD >> 22) % 2 == 1, (GUILD2 >> 22) % 2 == 0.
GUILD2 = GUILD + (1 << 22)
GENERAL2 = GUILD2 + 1
GUILDS = (GUILD, GUILD2)

USERS: dict[int, tuple[str, bool]] = {
    BOT: ("hermes", True),
    ALICE: ("alice", False),
    BOB_BOT: ("bob-bot", True),
    CAROL: ("carol", False),
}


class Snowflakes:
    """Increasing Discord snowflakes based on the current time."""

    def __init__(self) -> None:
        self._counter = itertools.count()

    def next(self) -> int:
        ms = int(time.time() * 1000) - DISCORD_EPOCH_MS
        return (ms << 22) | (next(self._counter) & 0x3FFFFF)


def iso(ts: float | None = None) -> str:
    return dt.datetime.fromtimestamp(ts or time.time(), dt.UTC).isoformat()


def user_json(uid: int) -> dict[str, Any]:
    name, bot = USERS.get(uid, (f"user{uid}", False))
    return {"id": str(uid), "username": name, "discriminator": "0", "global_name": name,
            "avatar": None, "bot": bot}


def _text_channel(cid: int, name: str, guild: int = GUILD) -> dict[str, Any]:
    return {"id": str(cid), "type": 0, "guild_id": str(guild), "name": name, "position": 0,
            "permission_overwrites": [], "nsfw": False, "parent_id": None, "topic": None,
            "last_message_id": None, "rate_limit_per_user": 0, "flags": 0}


def _thread(cid: int, name: str) -> dict[str, Any]:
    return {"id": str(cid), "type": 11, "guild_id": str(GUILD), "parent_id": str(GENERAL),
            "owner_id": str(ALICE), "name": name, "last_message_id": None, "message_count": 0,
            "member_count": 2, "rate_limit_per_user": 0, "flags": 0,
            "thread_metadata": {"archived": False, "auto_archive_duration": 1440,
                                "archive_timestamp": iso(), "locked": False}}


def channel_json(cid: int) -> dict[str, Any] | None:
    if cid == GENERAL:
        return _text_channel(GENERAL, "general")
    if cid == GENERAL2:
        return _text_channel(GENERAL2, "general", GUILD2)
    if cid == THREAD:
        return _thread(THREAD, "help thread")
    if cid == LATE_THREAD:
        return _thread(LATE_THREAD, "late thread")
    if cid in (DM_ALICE, DM_BLOCKED):
        return {"id": str(cid), "type": 1, "last_message_id": None,
                "recipients": [user_json(ALICE)]}
    return None


def guild_json(guild: int = GUILD) -> dict[str, Any]:
    first = guild == GUILD
    everyone = {"id": str(guild), "name": "@everyone", "permissions": "1071698660929",
                "position": 0, "color": 0, "hoist": False, "managed": False,
                "mentionable": False, "flags": 0}
    return {
        "id": str(guild), "name": "Fake Guild" if first else "Other Guild", "icon": None,
        "owner_id": str(ALICE), "roles": [everyone], "emojis": [], "stickers": [],
        "features": [],
        "channels": [_text_channel(GENERAL, "general") if first
                     else _text_channel(GENERAL2, "general", GUILD2)],
        "threads": [_thread(THREAD, "help thread")] if first else [],
        "members": [], "member_count": 3, "large": False, "unavailable": False,
        "joined_at": iso(), "verification_level": 0, "default_message_notifications": 0,
        "explicit_content_filter": 0, "mfa_level": 0, "premium_tier": 0,
        "preferred_locale": "en-US", "nsfw_level": 0, "system_channel_flags": 0,
        "voice_states": [], "presences": [], "stage_instances": [],
        "guild_scheduled_events": [], "soundboard_sounds": [],
    }


def guild_of(cid: int) -> int | None:
    if cid == GENERAL2:
        return GUILD2
    return GUILD if cid in (GENERAL, THREAD, LATE_THREAD) else None


@dataclass(slots=True)
class StoredMessage:
    """A message as the fake stores it (user and bot messages alike)."""

    id: int
    channel_id: int
    author_id: int
    content: str
    created: float = field(default_factory=time.time)
    reference: int | None = None
    mentions: list[int] = field(default_factory=list)
    attachments: list[dict[str, Any]] = field(default_factory=list)
    edits: int = 0
    edited: float | None = None
    deleted: bool = False
    components: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self, lookup: dict[int, StoredMessage] | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id), "channel_id": str(self.channel_id),
            "author": user_json(self.author_id), "content": self.content,
            "timestamp": iso(self.created),
            "edited_timestamp": iso(self.edited) if self.edited else None,
            "tts": False, "mention_everyone": False,
            "mentions": [user_json(u) for u in self.mentions], "mention_roles": [],
            "attachments": self.attachments, "embeds": [], "pinned": False,
            "type": 19 if self.reference else 0, "flags": 0,
            "components": self.components,
        }
        guild = guild_of(self.channel_id)
        if guild is not None:
            data["guild_id"] = str(guild)
        if self.reference is not None:
            data["message_reference"] = {"type": 0, "message_id": str(self.reference),
                                         "channel_id": str(self.channel_id)}
            if guild is not None:
                data["message_reference"]["guild_id"] = str(guild)
            target = (lookup or {}).get(self.reference)
            data["referenced_message"] = target.to_json() if target else None
        return data


def component_interaction(*, iid: int, message: StoredMessage, custom_id: str, user: int,
                          lookup: dict[int, StoredMessage] | None = None) -> dict[str, Any]:
    """INTERACTION_CREATE for a button press (type 3, component type 2) under `message`."""
    guild = guild_of(message.channel_id)
    data: dict[str, Any] = {
        "id": str(iid), "application_id": str(BOT), "type": 3, "token": f"itoken-{iid}",
        "version": 1, "data": {"custom_id": custom_id, "component_type": 2},
        "channel_id": str(message.channel_id), "channel": channel_json(message.channel_id),
        "message": message.to_json(lookup), "locale": "en-US", "app_permissions": "0",
        "entitlements": [], "authorizing_integration_owners": {}, "context": 0 if guild else 1,
        "attachment_size_limit": 8 * 1024 * 1024,
    }
    if guild is not None:
        data["guild_id"] = str(guild)
        data["guild_locale"] = "en-US"
        data["member"] = {"user": user_json(user), "roles": [], "joined_at": iso(),
                          "deaf": False, "mute": False, "flags": 0, "permissions": "0",
                          "pending": False, "nick": None, "avatar": None}
    else:
        data["user"] = user_json(user)
    return data
