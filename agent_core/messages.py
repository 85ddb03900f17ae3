"""Message invariants enforced before a history goes on the wire.

Stored messages may carry extra keys (ids, timestamps, reasoning, `_`-prefixed markers). What is
sent is a copy with only the OpenAI fields of each role, every string scrubbed of lone
surrogates, every assistant tool call answered by exactly one tool result (a missing result is
replaced by a synthetic one, a stray result is dropped), and consecutive user or assistant
messages merged so roles alternate (only tool results repeat). The repair is deterministic: the
same input always yields the same output. None of these functions raise on odd input; a
message that is not a dict or has no known role is dropped.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "WIRE_KEYS",
    "interrupted_result",
    "missing_result",
    "repair",
    "scrub_text",
    "to_wire",
    "validate",
]

Message = dict[str, Any]

WIRE_KEYS: dict[str, frozenset[str]] = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset({"role", "content", "name", "tool_calls", "refusal"}),
    "tool": frozenset({"role", "content", "tool_call_id"}),
}


def scrub_text(text: str) -> str:
    """Return `text` with lone surrogates replaced by U+FFFD (valid pairs are joined)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _scrub_content(content: Any) -> Any:
    if isinstance(content, str):
        return scrub_text(content)
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                part = {k: v for k, v in part.items() if not k.startswith("_")}
                if isinstance(part.get("text"), str):
                    part["text"] = scrub_text(part["text"])
                parts.append(part)
            elif isinstance(part, str):
                parts.append({"type": "text", "text": scrub_text(part)})
        return parts
    if content is None:
        return None
    return scrub_text(str(content))


def _wire_call(call: Any) -> Message | None:
    if not isinstance(call, dict):
        return None
    fn = call.get("function") or {}
    name = fn.get("name") if isinstance(fn, dict) else None
    call_id = call.get("id")
    if not isinstance(name, str) or not name or not isinstance(call_id, str) or not call_id:
        return None
    args = fn.get("arguments", "")
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)
    return {
        "id": scrub_text(call_id),
        "type": "function",
        "function": {"name": scrub_text(name), "arguments": scrub_text(args or "{}")},
    }


def to_wire(message: Any) -> Message | None:
    """A wire copy of one stored message (None if it cannot be sent at all)."""
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    keys = WIRE_KEYS.get(role) if isinstance(role, str) else None
    if keys is None:
        return None
    out: Message = {}
    for key, value in message.items():
        if key not in keys:
            continue
        if key == "content":
            out[key] = _scrub_content(value)
        elif key == "tool_calls":
            calls = [c for c in (_wire_call(c) for c in value or ()) if c is not None]
            if calls:
                out[key] = calls
        elif isinstance(value, str):
            out[key] = scrub_text(value)
        else:
            out[key] = value
    if "content" not in out:
        out["content"] = None if role == "assistant" and out.get("tool_calls") else ""
    return out


def missing_result(call_id: str, name: str) -> Message:
    """Synthetic tool result for a call whose result was never recorded."""
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "tool_name": name,
        "content": f"[no result: the call to '{name}' has no recorded result]",
    }


def interrupted_result(call_id: str, name: str, reason: str) -> Message:
    """Synthetic tool result for a call skipped because the turn was interrupted."""
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "tool_name": name,
        "content": f"[interrupted: '{name}' was not run because the turn was interrupted ({reason})]",
    }


def _merge_content(a: Any, b: Any) -> Any:
    if a in (None, ""):
        return b
    if b in (None, ""):
        return a
    if isinstance(a, str) and isinstance(b, str):
        return f"{a}\n\n{b}"
    la = a if isinstance(a, list) else [{"type": "text", "text": str(a)}]
    lb = b if isinstance(b, list) else [{"type": "text", "text": str(b)}]
    return [*la, *lb]


def _pair(messages: Iterable[Message]) -> list[Message]:
    out: list[Message] = []
    pending: dict[str, str] = {}
    seen: set[str] = set()

    def flush() -> None:
        for cid, name in pending.items():
            wire = to_wire(missing_result(cid, name))
            if wire is not None:  # always: a synthetic result is a valid message
                out.append(wire)
        pending.clear()

    for msg in messages:
        if msg["role"] == "tool":
            cid = msg.get("tool_call_id")
            if isinstance(cid, str) and cid in pending:
                del pending[cid]
                out.append(msg)
            continue
        if pending:
            flush()
        calls = msg.get("tool_calls")
        if calls:
            fresh = []
            for c in calls:
                if c["id"] not in seen:
                    seen.add(c["id"])
                    fresh.append(c)
                    pending[c["id"]] = c["function"]["name"]
            if fresh:
                msg["tool_calls"] = fresh
            else:
                del msg["tool_calls"]
                if msg.get("content") is None:
                    msg["content"] = ""
        out.append(msg)
    flush()
    return out


def _merge(messages: list[Message]) -> list[Message]:
    out: list[Message] = []
    for msg in messages:
        prev = out[-1] if out else None
        role = msg["role"]
        if (
            prev is not None
            and role == prev["role"]
            and role in ("user", "assistant")
            and not prev.get("tool_calls")
        ):
            merged = dict(prev)
            merged["content"] = _merge_content(prev.get("content"), msg.get("content"))
            if msg.get("tool_calls"):
                merged["tool_calls"] = msg["tool_calls"]
            out[-1] = merged
            continue
        out.append(msg)
    return out


class _WireMemo:
    """Wire copies of plain text messages, by (role, content, tool_call_id).

    Every turn sends its whole history again, so a long chat converted the same few hundred
    messages each turn (scrubbing each text). A message with only a role, a text and
    possibly a tool call id has a wire copy that depends on those three alone; it is kept
    here, and every caller gets its own shallow copy (a caller may change it: the memory
    recall extends the last user message in place). The content strings are the ones the
    history already holds. Bounded; the oldest entry goes first. Other messages (tool calls,
    names, parts lists) are converted every time."""

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._entries: dict[tuple[str, str, str | None], Message] = {}
        self._lock = threading.Lock()  # compression repairs in a worker thread too

    def wire(self, message: Any) -> Message | None:
        if type(message) is not dict:
            return to_wire(message)
        role = message.get("role")
        content = message.get("content")
        call_id = message.get("tool_call_id")
        if (type(role) is not str or type(content) is not str
                or (call_id is not None and type(call_id) is not str)
                or "tool_calls" in message or "name" in message or "refusal" in message):
            return to_wire(message)
        key = (role, content, call_id)
        hit = self._entries.get(key)
        if hit is None:
            hit = to_wire(message)
            if hit is None:
                return None
            with self._lock:
                if len(self._entries) >= self._limit:
                    del self._entries[next(iter(self._entries))]
                self._entries[key] = hit
        return dict(hit)


_memo = _WireMemo()


def repair(messages: Iterable[Any]) -> list[Message]:
    """Wire copies of `messages` with every invariant restored. Deterministic; must not raise."""
    convert = _memo.wire
    wire = [w for w in map(convert, messages) if w is not None]
    return _merge(_pair(wire))


def validate(messages: Sequence[Message]) -> list[str]:
    """Problems that would make a provider reject `messages` (empty list = valid).

    Checks alternation (only tool results repeat), pairing of tool calls and results, absence
    of `_`-prefixed keys and lone surrogates. Meant for tests and debugging.
    """
    problems: list[str] = []
    pending: set[str] = set()
    prev_role: str | None = None
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if any(k.startswith("_") for k in msg):
            problems.append(f"#{i}: underscore key on the wire")
        try:
            json.dumps(msg, ensure_ascii=False).encode("utf-8")
        except (UnicodeEncodeError, TypeError, ValueError):
            problems.append(f"#{i}: not encodable as UTF-8 JSON")
        if role == "tool":
            cid = msg.get("tool_call_id")
            if cid not in pending:
                problems.append(f"#{i}: tool result {cid!r} answers no open call")
            pending.discard(cid)
        else:
            if pending:
                problems.append(f"#{i}: calls without result before it: {sorted(pending)}")
                pending.clear()
            if role == prev_role and role in ("user", "assistant"):
                problems.append(f"#{i}: two {role} messages in a row")
            for call in msg.get("tool_calls") or ():
                pending.add(call.get("id"))
        prev_role = role
    if pending:
        problems.append(f"end: calls without result: {sorted(pending)}")
    return problems
