"""Small helpers over OpenAI chat message dicts (copy-on-write, never mutate inputs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_core.compression.types import (
    COMPRESSED_SUMMARY_KEY,
    LEGACY_SUMMARY_PREFIX,
    SUMMARY_END_MARKER,
    SUMMARY_PREFIX,
)
from agent_core.tokens import TOKEN_CACHE_KEY

__all__ = [
    "Message",
    "call_index",
    "call_ids",
    "has_tool_calls",
    "is_blank_user",
    "is_summary",
    "replace_content",
    "role_of",
    "summary_body",
    "text_of",
]

Message = dict[str, Any]
_SUMMARY_STARTS = ("[CONTEXT COMPACTION", LEGACY_SUMMARY_PREFIX)


def role_of(msg: Mapping[str, Any]) -> str:
    return str(msg.get("role") or "")


def text_of(content: Any) -> str:
    """The text of a `content` field (text parts joined; other parts as `[type]`)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out: list[str] = []
        for part in content:
            if isinstance(part, Mapping):
                if part.get("type") == "text":
                    out.append(str(part.get("text") or ""))
                else:
                    out.append(f"[{part.get('type') or 'part'}]")
            else:
                out.append(str(part))
        return "\n".join(out)
    return str(content)


def has_tool_calls(msg: Mapping[str, Any]) -> bool:
    calls = msg.get("tool_calls")
    return role_of(msg) == "assistant" and isinstance(calls, list) and bool(calls)


def call_ids(msg: Mapping[str, Any]) -> list[str]:
    if not has_tool_calls(msg):
        return []
    return [str(c.get("id")) for c in msg["tool_calls"] if isinstance(c, Mapping) and c.get("id")]


def call_index(messages: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """tool_call_id -> (tool name, raw arguments) over every assistant tool call."""
    index: dict[str, tuple[str, str]] = {}
    for msg in messages:
        if not has_tool_calls(msg):
            continue
        for call in msg["tool_calls"]:
            if not isinstance(call, Mapping):
                continue
            fn = call.get("function")
            if isinstance(fn, Mapping) and call.get("id"):
                args = fn.get("arguments")
                index[str(call["id"])] = (
                    str(fn.get("name") or "tool"),
                    args if isinstance(args, str) else str(args or ""),
                )
    return index


def is_summary(msg: Mapping[str, Any]) -> bool:
    """A compaction summary: flagged, or (stored before flags existed) starting with a prefix."""
    if msg.get(COMPRESSED_SUMMARY_KEY):
        return True
    content = msg.get("content")
    return isinstance(content, str) and content.startswith(_SUMMARY_STARTS)


def summary_body(msg: Mapping[str, Any]) -> str:
    """The summary text without prefix and end marker."""
    text = text_of(msg.get("content")).strip()
    for prefix in (SUMMARY_PREFIX, LEGACY_SUMMARY_PREFIX):
        if text.startswith(prefix):
            text = text[len(prefix) :]
            break
    else:
        if text.startswith("[CONTEXT COMPACTION"):
            sep = text.find("\n\n")
            text = text[sep + 2 :] if sep > 0 else ""
    if text.rstrip().endswith(SUMMARY_END_MARKER):
        text = text.rstrip()[: -len(SUMMARY_END_MARKER)]
    return text.strip()


def is_blank_user(msg: Mapping[str, Any]) -> bool:
    """A user message with no text and no attachments (a platform echo artefact)."""
    if role_of(msg) != "user" or msg.get(COMPRESSED_SUMMARY_KEY):
        return False
    content = msg.get("content")
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    if isinstance(content, list):
        return all(
            isinstance(p, Mapping) and p.get("type") == "text" and not str(p.get("text") or "").strip()
            for p in content
        )
    return False


def replace_content(msg: Mapping[str, Any], content: Any, **extra: Any) -> Message:
    """A shallow copy of `msg` with new content (and other keys); the token cache is dropped."""
    out = {k: v for k, v in msg.items() if k != TOKEN_CACHE_KEY}
    out["content"] = content
    out.update(extra)
    return out
