"""Turn the middle of a history into bounded, redacted summarizer input.

Budgeting happens on cached token estimates before any text is copied: each message asks for
at most a role cap (user 600 tokens, assistant 300, tool result 150 = its one-line
description plus a short excerpt; long texts keep their head and tail), and when the total
asked exceeds the input budget (`max_total_tokens`, at most `chunk_tokens × max_chunks`) a
common per-message cap is lowered (water filling) down to 48 tokens. If even that does not
fit, the oldest messages are left out and counted in one line. Only the text that will be sent
is sliced and redacted (one pass per chunk), so the cost is bounded by the prompt size, not by
the history size. Excerpts are cut at whitespace so that a credential is never split into an
unrecognisable half. The rendered entries are packed into at most `max_chunks` chunks of
`chunk_tokens`; skill markers are looked for in place (message edges), without copies.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from agent_core.compression.messages import Message, has_tool_calls, role_of, text_of
from agent_core.compression.oneliners import describe_tool_result, skill_marker
from agent_core.tokens import estimate_message, estimate_text
from hermes_common.redact import redact

__all__ = ["RenderedMiddle", "clip_to_tokens", "find_skill_markers", "render_middle"]

_ROLE_CAPS = {"user": 600, "assistant": 300, "tool": 150}
_DEFAULT_CAP = 300
_MIN_CAP = 48
_HEADER_TOKENS = 12
_ARGS_CHARS = 160
_MAX_CALLS = 8
_MARKER_EDGE = 2048
_SNAP = 200
_PACK_SLACK = 0.9
_SKILL_RE = re.compile(r"\[SKILL_PRUNED:[^\]\n]*\]")


@dataclass(slots=True)
class RenderedMiddle:
    chunks: list[str]
    omitted: int = 0
    rendered: int = 0
    chars: int = 0
    skill_markers: list[str] = field(default_factory=list)


def find_skill_markers(texts: Sequence[str]) -> list[str]:
    """`[SKILL_PRUNED: …]` markers in order of appearance, without duplicates."""
    seen: dict[str, None] = {}
    for text in texts:
        if "[SKILL_PRUNED" in text:
            for marker in _SKILL_RE.findall(text):
                seen.setdefault(marker, None)
    return list(seen)


def _scope_markers(msgs: Sequence[Message],
                   index: dict[str, tuple[str, str]] | None = None) -> list[str]:
    """Skill markers of `msgs`: anywhere in a short message, in the first and last
    `_MARKER_EDGE` characters of a long one (searched in place, nothing is copied), and the
    marker each `skill_view` result becomes when it is described (`index`: call id → (tool
    name, arguments))."""
    seen: dict[str, None] = {}
    for msg in msgs:
        if index is not None and role_of(msg) == "tool":
            name, args = index.get(str(msg.get("tool_call_id")), ("", ""))
            marker = skill_marker(name, args)
            if marker is not None:
                seen.setdefault(marker, None)
        content = msg.get("content")
        text = content if isinstance(content, str) else text_of(content)
        n = len(text)
        ranges: tuple[tuple[int, int], ...]
        if n <= 2 * _MARKER_EDGE:
            ranges = ((0, n),)
        else:
            ranges = ((0, _MARKER_EDGE), (n - _MARKER_EDGE, n))
        for lo, hi in ranges:
            if text.find("[SKILL_PRUNED", lo, hi) < 0:
                continue
            for match in _SKILL_RE.finditer(text, lo, hi):
                seen.setdefault(match.group(), None)
    return list(seen)


def _snap_left(text: str, pos: int) -> int:
    if pos <= 0 or pos >= len(text):
        return max(0, min(pos, len(text)))
    lo = pos - _SNAP if pos > _SNAP else 0
    cut = max(text.rfind(" ", lo, pos), text.rfind("\n", lo, pos))
    return cut if cut > 0 else pos


def _snap_right(text: str, pos: int) -> int:
    if pos <= 0 or pos >= len(text):
        return max(0, min(pos, len(text)))
    ws = text.find(" ", pos, pos + _SNAP)
    nl = text.find("\n", pos, pos + _SNAP)
    if ws < 0:
        return nl + 1 if nl >= 0 else pos
    return (ws if nl < 0 or ws < nl else nl) + 1


def _excerpt(text: str, chars: int) -> str:
    """At most about `chars` characters of `text`: head and tail, cut at whitespace."""
    if len(text) <= chars:
        return text
    if chars <= 0:
        return ""
    head = _snap_left(text, int(chars * 0.6))
    tail = _snap_right(text, len(text) - int(chars * 0.4))
    omitted = max(0, tail - head)
    return f"{text[:head]}\n...[{omitted:,} chars omitted]...\n{text[tail:]}"


def clip_to_tokens(text: str, tokens: int) -> str:
    """`text` shortened (head and tail kept) to about `tokens` estimated tokens."""
    have = estimate_text(text)
    if have <= tokens:
        return text
    return _excerpt(text, max(0, int(len(text) * tokens / have)))


def _water_level(asks: list[int], total: int) -> int:
    """Largest cap c with sum(min(a, c)) <= total."""
    if sum(asks) <= total:
        return max(asks, default=0)
    ordered = sorted(asks)
    remaining = total
    for i, ask in enumerate(ordered):
        left = len(ordered) - i
        if ask * left > remaining:
            return remaining // left
        remaining -= ask
    return ordered[-1]


def _render_one(
    msg: Message, number: int, budget: int, tokens: int, index: dict[str, tuple[str, str]]
) -> str:
    role = role_of(msg)
    text = text_of(msg.get("content"))
    tokens = max(1, tokens)
    chars_per_token = max(1.0, (len(text) + 1) / tokens)
    room = int((budget - _HEADER_TOKENS) * chars_per_token)
    if role == "tool":
        name, args = index.get(str(msg.get("tool_call_id")), (str(msg.get("name") or "tool"), ""))
        line = describe_tool_result(name, args, text, redact_output=False)
        body = _excerpt(text, room - len(line)) if len(text) > 200 else text
        out = f"[TOOL RESULT {name} #{number}]: {line}"
        if body:
            out += "\n" + body
        return out
    label = role.upper() or "MESSAGE"
    out = f"[{label} #{number}]: {_excerpt(text, room)}"
    if has_tool_calls(msg):
        calls: list[str] = []
        for call in msg["tool_calls"][:_MAX_CALLS]:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                raw = fn.get("arguments")
                args_s = raw if isinstance(raw, str) else str(raw or "")
                calls.append(f"  -> {fn.get('name')}({_excerpt(args_s, _ARGS_CHARS)})")
        extra = len(msg["tool_calls"]) - _MAX_CALLS
        if extra > 0:
            calls.append(f"  -> (+{extra} more calls)")
        out += "\n" + "\n".join(calls)
    return out


def _omitted_line(msgs: Sequence[Message], index: dict[str, tuple[str, str]]) -> str:
    roles = Counter(role_of(m) for m in msgs)
    tools = Counter(
        index.get(str(m.get("tool_call_id")), (str(m.get("name") or "tool"), ""))[0]
        for m in msgs
        if role_of(m) == "tool"
    )
    top = ", ".join(f"{name} ×{count}" for name, count in tools.most_common(5))
    return (
        f"[{len(msgs):,} older messages left out of this input to fit the summarizer: "
        f"{roles.get('user', 0)} user, {roles.get('assistant', 0)} assistant, "
        f"{roles.get('tool', 0)} tool results" + (f" ({top})" if top else "") + "]"
    )


def render_middle(
    turns: Sequence[Message],
    index: dict[str, tuple[str, str]],
    *,
    chunk_tokens: int,
    max_chunks: int,
    max_total_tokens: int | None = None,
    tokens: Sequence[int] | None = None,
) -> RenderedMiddle:
    """Render `turns` (oldest first) into at most `max_chunks` chunks of `chunk_tokens`, and
    at most `max_total_tokens` overall; `tokens` are the turns' estimates when the caller has
    them. Must not raise."""
    chunk_tokens = max(256, chunk_tokens)
    max_chunks = max(1, max_chunks)
    per_msg_cap = max(_MIN_CAP, chunk_tokens // 4)
    if tokens is None:
        tokens = [estimate_message(m) for m in turns]
    asks = [
        min(t, _ROLE_CAPS.get(role_of(m), _DEFAULT_CAP), per_msg_cap) + _HEADER_TOKENS
        for m, t in zip(turns, tokens, strict=True)
    ]
    total = int(chunk_tokens * max_chunks * _PACK_SLACK)
    if max_total_tokens is not None:
        total = max(_MIN_CAP * 4, min(total, max_total_tokens))
    first = 0
    floor_cost = [a if a < _MIN_CAP else _MIN_CAP for a in asks]
    if sum(floor_cost) > total:
        acc = 0
        first = len(turns)
        while first > 0 and acc + floor_cost[first - 1] <= total - 64:
            acc += floor_cost[first - 1]
            first -= 1
    level = max(_MIN_CAP, _water_level(asks[first:], total - (64 if first else 0)))
    entries: list[tuple[str, int]] = []
    if first:
        line = _omitted_line(turns[:first], index)
        entries.append((line, estimate_text(line)))
    for i in range(first, len(turns)):
        budget = min(asks[i], level)
        text = _render_one(turns[i], i + 1, budget, tokens[i], index)
        entries.append((text, budget + len(text) // 200))
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for entry, cost in entries:
        if current and used + cost > chunk_tokens:
            chunks.append("\n\n".join(current))
            current, used = [], 0
        current.append(entry)
        used += cost
    if current:
        chunks.append("\n\n".join(current))
    if len(chunks) > max_chunks:
        chunks = chunks[len(chunks) - max_chunks :]
    chunks = [redact(c) for c in chunks]
    return RenderedMiddle(
        chunks=chunks,
        omitted=first,
        rendered=len(turns) - first,
        chars=sum(len(c) for c in chunks),
        skill_markers=_scope_markers(turns, index),
    )
