"""Step 1: shrink old tool output without an LLM (copy-on-write).

* Identical tool outputs (string content of at least 200 characters) are deduplicated over
  the whole history: the newest copy stays, older ones become `DUPLICATE_MARKER`. Candidates
  are grouped by length first, so only same-length outputs are ever hashed or compared.
* Tool results before `boundary` (outside the protected tail) longer than 200 characters
  become a one-line description (`oneliners.describe_tool_result`); image parts become a
  short text part.
* Tool-call arguments before `boundary` longer than 500 characters get every JSON string
  leaf over 200 characters cut to 200 + "...[truncated]" (invalid JSON is left as it is).
* Pressure pass: when the protected tail holds more than 1.5 × its budget, its largest tool
  outputs are cut (largest first) to their description plus the last 1,500 characters until
  it fits again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_core.compression.messages import (
    Message,
    call_index,
    has_tool_calls,
    replace_content,
    role_of,
)
from agent_core.compression.oneliners import describe_tool_result
from agent_core.tokens import TOKEN_CACHE_KEY, estimate_message

__all__ = [
    "DUPLICATE_MARKER",
    "IMAGE_REMOVED",
    "dedup_tool_outputs",
    "pressure_pass",
    "prune_before",
    "tail_start_by_tokens",
]

DUPLICATE_MARKER = "[Duplicate tool output — same content as a more recent call]"
IMAGE_REMOVED = "[screenshot removed to save context]"
DEDUP_FLOOR = 200
PRUNE_FLOOR = 200
ARGS_LIMIT = 500
ARG_LEAF_LIMIT = 200
PRESSURE_FACTOR = 1.5
PRESSURE_KEEP_CHARS = 1500
_PRESSURE_MIN_CHARS = 2 * PRESSURE_KEEP_CHARS


def tail_start_by_tokens(
    messages: Sequence[Mapping[str, Any]], budget: int, floor: int, lower: int = 0
) -> int:
    """Index where the protected tail starts: newest messages within `budget` tokens, and at
    least `floor` messages, never reaching below `lower`."""
    n = len(messages)
    acc = 0
    i = n
    while i > lower:
        tokens = estimate_message(messages[i - 1])
        if acc + tokens > budget and n - i >= floor:
            break
        acc += tokens
        i -= 1
    return i


def dedup_tool_outputs(messages: list[Message]) -> int:
    """Replace older duplicates of tool outputs in place in the (already copied) list."""
    by_len: dict[int, list[int]] = {}
    for i, msg in enumerate(messages):
        content = msg.get("content")
        if role_of(msg) == "tool" and isinstance(content, str) and len(content) >= DEDUP_FLOOR:
            by_len.setdefault(len(content), []).append(i)
    replaced = 0
    for indices in by_len.values():
        if len(indices) < 2:
            continue
        kept: dict[int, list[str]] = {}
        for i in reversed(indices):
            content = messages[i]["content"]
            key = hash(content)
            bucket = kept.setdefault(key, [])
            if any(content == other for other in bucket):
                messages[i] = replace_content(messages[i], DUPLICATE_MARKER)
                replaced += 1
            else:
                bucket.append(content)
    return replaced


def _strip_images(content: list[Any]) -> list[Any] | None:
    changed = False
    out: list[Any] = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") in ("image_url", "image", "input_image"):
            out.append({"type": "text", "text": IMAGE_REMOVED})
            changed = True
        else:
            out.append(part)
    return out if changed else None


def _truncate_leaves(value: Any) -> tuple[Any, bool]:
    if isinstance(value, str):
        if len(value) > ARG_LEAF_LIMIT:
            return value[:ARG_LEAF_LIMIT] + "...[truncated]", True
        return value, False
    if isinstance(value, dict):
        changed = False
        out: dict[str, Any] = {}
        for k, v in value.items():
            out[k], c = _truncate_leaves(v)
            changed |= c
        return out, changed
    if isinstance(value, list):
        items = [_truncate_leaves(v) for v in value]
        return [v for v, _ in items], any(c for _, c in items)
    return value, False


def _truncate_arguments(msg: Message) -> Message | None:
    calls = msg.get("tool_calls")
    if not isinstance(calls, list):
        return None
    new_calls: list[Any] = []
    changed = False
    for call in calls:
        fn = call.get("function") if isinstance(call, Mapping) else None
        args = fn.get("arguments") if isinstance(fn, Mapping) else None
        if isinstance(args, str) and len(args) > ARGS_LIMIT:
            try:
                parsed = json.loads(args)
            except (ValueError, RecursionError):
                parsed = None
            if parsed is not None and isinstance(fn, Mapping):
                cut, did = _truncate_leaves(parsed)
                if did:
                    fn2 = {**fn, "arguments": json.dumps(cut, ensure_ascii=False)}
                    new_calls.append({**call, "function": fn2})
                    changed = True
                    continue
        new_calls.append(call)
    if not changed:
        return None
    out = {k: v for k, v in msg.items() if k != TOKEN_CACHE_KEY}
    out["tool_calls"] = new_calls
    return out


def prune_before(
    messages: list[Message],
    boundary: int,
    *,
    start: int = 0,
    index: dict[str, tuple[str, str]] | None = None,
) -> tuple[int, int]:
    """Describe old tool results and cut big arguments in `messages[start:boundary]`, in place
    in the (already copied) list. Returns (results pruned, calls truncated)."""
    calls = index if index is not None else call_index(messages)
    pruned = truncated = 0
    for i in range(start, min(boundary, len(messages))):
        msg = messages[i]
        role = role_of(msg)
        if role == "tool":
            content = msg.get("content")
            if isinstance(content, str):
                if len(content) <= PRUNE_FLOOR or content == DUPLICATE_MARKER:
                    continue
                name, args = calls.get(str(msg.get("tool_call_id")), (str(msg.get("name") or "tool"), ""))
                messages[i] = replace_content(msg, describe_tool_result(name, args, content))
                pruned += 1
            elif isinstance(content, list):
                stripped = _strip_images(content)
                if stripped is not None:
                    messages[i] = replace_content(msg, stripped)
                    pruned += 1
        elif role == "assistant" and has_tool_calls(msg):
            new = _truncate_arguments(msg)
            if new is not None:
                messages[i] = new
                truncated += 1
    return pruned, truncated


def pressure_pass(
    messages: list[Message],
    tail_start: int,
    budget: int,
    index: dict[str, tuple[str, str]] | None = None,
) -> int:
    """Trim the largest tool outputs of the tail while it exceeds 1.5 × `budget` (in place in
    the copied list). Returns how many were trimmed."""
    limit = int(budget * PRESSURE_FACTOR)
    total = sum(estimate_message(m) for m in messages[tail_start:])
    if total <= limit:
        return 0
    calls = index if index is not None else call_index(messages)
    candidates = [
        i
        for i in range(tail_start, len(messages))
        if role_of(messages[i]) == "tool"
        and isinstance(messages[i].get("content"), str)
        and len(messages[i]["content"]) > _PRESSURE_MIN_CHARS
    ]
    candidates.sort(key=lambda i: len(messages[i]["content"]), reverse=True)
    trimmed = 0
    for i in candidates:
        if total <= limit:
            break
        msg = messages[i]
        content = msg["content"]
        name, args = calls.get(str(msg.get("tool_call_id")), (str(msg.get("name") or "tool"), ""))
        text = (
            f"{describe_tool_result(name, args, content)}\n"
            f"[older output trimmed to save context; the last {PRESSURE_KEEP_CHARS:,} characters "
            f"follow]\n{content[-PRESSURE_KEEP_CHARS:]}"
        )
        new = replace_content(msg, text)
        total += estimate_message(new) - estimate_message(msg)
        messages[i] = new
        trimmed += 1
    return trimmed
