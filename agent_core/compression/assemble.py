"""Final assembly: head, one summary message, optional continuation, tail; then repairs.

* The summary message's content is SUMMARY_PREFIX, the body and SUMMARY_END_MARKER; it carries
  `_compressed_summary: True` (underscore keys never reach the wire).
* A system message at index 0 gets the compaction note appended once (idempotent).
* Blank user echo messages are dropped before planning (`drop_blank_echoes`) wherever that
  keeps user/assistant alternation.
* Orphaned tool halves are sanitized last: results whose call is gone are dropped, calls whose
  result is gone are removed from the assistant message (which, left empty, says
  "(tool call removed)").
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_core.compression.boundaries import Layout
from agent_core.compression.messages import (
    Message,
    call_ids,
    is_blank_user,
    is_summary,
    replace_content,
    role_of,
    text_of,
)
from agent_core.compression.types import (
    COMPRESSED_SUMMARY_KEY,
    CONTINUATION_TEXT,
    SUMMARY_END_MARKER,
    SUMMARY_PREFIX,
    SYSTEM_COMPACTION_NOTE,
)
from agent_core.tokens import TOKEN_CACHE_KEY

__all__ = [
    "assemble",
    "drop_blank_echoes",
    "sanitize_tool_pairs",
    "summary_message",
]


def drop_blank_echoes(messages: Sequence[Message]) -> list[Message]:
    """`messages` without blank user messages, except where dropping one would put two
    assistant messages next to each other."""
    out: list[Message] = []
    n = len(messages)
    for i, msg in enumerate(messages):
        if is_blank_user(msg):
            prev = next((role_of(m) for m in reversed(out) if role_of(m) != "tool"), None)
            nxt = role_of(messages[i + 1]) if i + 1 < n else None
            if not (prev == "assistant" and nxt == "assistant"):
                continue
        out.append(msg)
    return out


def summary_message(body: str, role: str) -> Message:
    return {
        "role": role,
        "content": f"{SUMMARY_PREFIX}\n\n{body.strip()}\n\n{SUMMARY_END_MARKER}",
        COMPRESSED_SUMMARY_KEY: True,
    }


def sanitize_tool_pairs(messages: Sequence[Message]) -> list[Message]:
    """Drop tool results without a call and tool calls without a result (copy-on-write)."""
    calls: set[str] = set()
    for msg in messages:
        calls.update(call_ids(msg))
    answered = {
        str(m.get("tool_call_id")) for m in messages if role_of(m) == "tool" and m.get("tool_call_id")
    }
    out: list[Message] = []
    for msg in messages:
        role = role_of(msg)
        if role == "tool":
            if str(msg.get("tool_call_id")) in calls:
                out.append(msg)
            continue
        ids = call_ids(msg)
        if ids and any(i not in answered for i in ids):
            kept = [c for c in msg["tool_calls"] if str(c.get("id")) in answered]
            new = {k: v for k, v in msg.items() if k not in (TOKEN_CACHE_KEY, "tool_calls")}
            if kept:
                new["tool_calls"] = kept
            elif not text_of(new.get("content")).strip():
                new["content"] = "(tool call removed)"
            out.append(new)
            continue
        out.append(msg)
    return out


def _with_note(system: Message) -> Message:
    content = system.get("content")
    if isinstance(content, str):
        if SYSTEM_COMPACTION_NOTE in content:
            return system
        sep = "\n\n" if content.strip() else ""
        return replace_content(system, content.rstrip() + sep + SYSTEM_COMPACTION_NOTE)
    return system


def assemble(work: Sequence[Message], layout: Layout, body: str) -> list[Message]:
    """The compressed history (a new list; unchanged messages are shared, not copied)."""
    head = list(work[: layout.head_end])
    if head and role_of(head[0]) == "system":
        head[0] = _with_note(head[0])
    middle: list[Message] = [summary_message(body, layout.summary_role)]
    if layout.continuation:
        middle.append({"role": "user", "content": CONTINUATION_TEXT, "_synthetic": "continuation"})
    tail = [m for m in work[layout.cut :] if not is_summary(m)]
    return sanitize_tool_pairs(head + middle + tail)
