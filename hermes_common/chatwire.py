"""The `hermes chat` ↔ cli adapter protocol (`adapters.cli`, `gateway.chat`): one JSON object per line over a Unix socket.

Client → adapter:
  {"t": "hello", "user": NAME}            first line; NAME becomes the chat and user id
  {"t": "message", "id": ID, "text": T}   a user message or slash command
Adapter → client:
  {"t": "ready", "chat": NAME}
  {"t": "send", "id": MID, "text": T, "reply_to": ID|null}    a new bot message
  {"t": "edit", "id": MID, "text": T}                          the whole new text of MID
  {"t": "done", "reply_to": ID, "ok": BOOL, "error": T|null}   the event ID is answered
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_LINE", "decode", "encode"]

MAX_LINE = 4 * 1024 * 1024


def encode(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any] | None:
    """One frame, or None for a line that is not a JSON object."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None
