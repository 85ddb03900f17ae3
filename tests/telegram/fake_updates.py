"""Builders of user-side Bot API objects (messages, entities, files) for the fake server."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["USER", "Chat", "entities_for", "utf16_len"]

USER: dict[str, Any] = {"id": 4242, "is_bot": False, "first_name": "Ada", "username": "ada"}

_COMMAND = re.compile(r"^/[A-Za-z0-9_]+(?:@[A-Za-z0-9_]+)?")
_MENTION = re.compile(r"(?<![\w@])@[A-Za-z0-9_]{3,32}")


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass
class Chat:
    id: int
    type: str = "private"
    title: str | None = None
    is_forum: bool = False
    topics: set[int] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "type": self.type}
        if self.type == "private":
            out["first_name"] = USER["first_name"]
        else:
            out["title"] = self.title or f"chat {self.id}"
        if self.is_forum:
            out["is_forum"] = True
        return out


def entities_for(text: str) -> list[dict[str, Any]]:
    """bot_command and mention entities as Telegram computes them (UTF-16 offsets)."""
    out: list[dict[str, Any]] = []
    cmd = _COMMAND.match(text)
    if cmd:
        out.append({"type": "bot_command", "offset": 0, "length": utf16_len(cmd.group(0))})
    for m in _MENTION.finditer(text):
        out.append({"type": "mention", "offset": utf16_len(text[: m.start()]),
                    "length": utf16_len(m.group(0))})
    return out


def now() -> int:
    return int(time.time())
