"""Message dicts in and out of rows, ids, text scrubbing.

A message goes in as an OpenAI-style dict: `role`, `content` (str, None, or a list of parts),
`tool_calls` (list), `tool_call_id`, `name`/`tool_name`, `reasoning` (or
`reasoning_content`), `finish_reason`. Storage-side keys: `_ts` (timestamp),
`_token_count`, `_api_content`, `_platform_message_id`. Every other key (underscore keys such
as `_compressed_summary`, or unknown wire keys) is kept in the `meta` JSON column and given
back verbatim. On load, `_id` (row id) and `_ts` are added.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "MESSAGE_COLUMNS",
    "new_session_id",
    "scrub",
    "message_to_row",
    "row_to_message",
    "preview",
]

MESSAGE_COLUMNS = (
    "session_id, role, active, compacted, timestamp, tool_name, tool_call_id, finish_reason, "
    "token_count, platform_message_id, content_json, meta, reasoning, tool_calls, api_content, "
    "content"
)

_BASE_KEYS = frozenset(
    {
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        "tool_name",
        "reasoning",
        "reasoning_content",
        "finish_reason",
        "_id",
        "_ts",
        "_token_count",
        "_api_content",
        "_platform_message_id",
        "_active",
        "_compacted",
    }
)


def new_session_id(now: float | None = None) -> str:
    """A time-sortable id: `YYYYMMDD_HHMMSS_mmm_<8 hex>` (UTC)."""
    t = time.time() if now is None else now
    stamp = datetime.fromtimestamp(t, UTC)
    return f"{stamp:%Y%m%d_%H%M%S}_{stamp.microsecond // 1000:03d}_{os.urandom(4).hex()}"


def scrub(text: str | None) -> str | None:
    """Make text storable on every backend: lone surrogates and NUL (which PostgreSQL text
    cannot hold) become U+FFFD. Must not raise."""
    if text is None:
        return None
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _dumps(value: Any) -> str:
    return scrub(json.dumps(value, ensure_ascii=False, default=str)) or ""


def message_to_row(session_id: str, msg: dict[str, Any], now: float) -> tuple[Any, ...]:
    """Row values in `MESSAGE_COLUMNS` order. Raises `ValueError` when `role` is missing."""
    role = msg.get("role")
    if not isinstance(role, str) or not role:
        raise ValueError("message needs a non-empty 'role'")
    content = msg.get("content")
    content_json = 0
    if content is not None and not isinstance(content, str):
        content, content_json = _dumps(content), 1
    tool_calls = msg.get("tool_calls")
    tool_name = msg.get("tool_name")
    if tool_name is None and role == "tool":
        tool_name = msg.get("name")
    reasoning = msg.get("reasoning")
    if reasoning is None:
        reasoning = msg.get("reasoning_content")
    extra = {k: v for k, v in msg.items() if k not in _BASE_KEYS}
    ts = msg.get("_ts")
    return (
        session_id,
        role,
        1,
        0,
        float(ts) if isinstance(ts, int | float) else now,
        _str(tool_name),
        _str(msg.get("tool_call_id")),
        _str(msg.get("finish_reason")),
        msg.get("_token_count") if isinstance(msg.get("_token_count"), int) else None,
        _str(msg.get("_platform_message_id")),
        content_json,
        _dumps(extra) if extra else None,
        scrub(reasoning) if isinstance(reasoning, str) else None,
        _dumps(tool_calls) if tool_calls else None,
        _str(msg.get("_api_content")),
        scrub(content),
    )


def _str(value: Any) -> str | None:
    if value is None:
        return None
    return scrub(value if isinstance(value, str) else str(value))


def row_to_message(row: Any, *, with_flags: bool = False) -> dict[str, Any]:
    """The stored message as a dict (see module docstring); `_id` and `_ts` added."""
    content: Any = row["content"]
    if row["content_json"] and content is not None:
        content = json.loads(content)
    msg: dict[str, Any] = {"role": row["role"], "content": content}
    if row["tool_calls"]:
        msg["tool_calls"] = json.loads(row["tool_calls"])
    for col in ("tool_call_id", "tool_name", "reasoning", "finish_reason"):
        if row[col] is not None:
            msg[col] = row[col]
    if row["meta"]:
        msg.update(json.loads(row["meta"]))
    if row["token_count"] is not None:
        msg["_token_count"] = row["token_count"]
    if row["api_content"] is not None:
        msg["_api_content"] = row["api_content"]
    if row["platform_message_id"] is not None:
        msg["_platform_message_id"] = row["platform_message_id"]
    msg["_id"] = row["id"]
    msg["_ts"] = row["timestamp"]
    if with_flags:
        msg["_active"] = bool(row["active"])
        msg["_compacted"] = bool(row["compacted"])
    return msg


def preview(text: str | None, limit: int = 200) -> str:
    if not text:
        return ""
    return text if len(text) <= limit else text[: limit - 1] + "…"
