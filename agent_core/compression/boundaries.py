"""Steps 2 and 3: the protected head, the tail cut, and a role layout that alternates.

Head: the system message (if first) plus `protect_first_n` messages, only while the history
holds no compaction summary yet; after the first compression the head decays to the system
message alone, so early turns do not fossilise. A head never ends inside a tool group.

Tail: the newest messages within the tail token budget, at least `floor` messages (or exactly
the last `keep_last_turns` user turns when asked). A cut that lands inside a tool group moves
back before the assistant message that made the calls, so calls and results stay together.
The newest real user message always stays in the tail, and an existing summary never ends up
in the tail (it is folded into the new one).

Layout: the summary is one standalone message between head and tail whose role alternates
with both neighbours; if no real user message survives, a synthetic continuation user message
follows it. With an empty tail (`keep_last_turns=0`) the summary prefers the assistant role so
that the next user message alternates with it. When no role fits (head ends with user and tail starts with assistant, or the
reverse), the cut first moves back to an older bridge message of the needed role, then
forward, then the head decays to the system message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent_core.compression.messages import (
    Message,
    has_tool_calls,
    is_blank_user,
    is_summary,
    role_of,
)
from agent_core.compression.prune import tail_start_by_tokens

__all__ = ["Layout", "find_head_end", "find_tail_cut", "plan_layout", "tail_floor"]

_TAIL_FLOOR_CAP = 8


@dataclass(frozen=True, slots=True)
class Layout:
    head_end: int
    cut: int
    summary_role: str
    continuation: bool


def tail_floor(protect_last_n: int) -> int:
    """Minimum tail size in messages: protect_last_n, at least 3, capped at 8."""
    return max(3, min(protect_last_n, _TAIL_FLOOR_CAP))


def _is_real_user(msg: Message) -> bool:
    return role_of(msg) == "user" and not is_summary(msg) and not is_blank_user(msg)


def find_head_end(messages: Sequence[Message], protect_first_n: int, decayed: bool) -> int:
    start = 1 if messages and role_of(messages[0]) == "system" else 0
    end = min(len(messages), start + (0 if decayed else max(0, protect_first_n)))
    while end < len(messages) and role_of(messages[end]) == "tool":
        end += 1
    for i in range(start, end):
        if is_summary(messages[i]):
            return i
    return end


def _align_back(messages: Sequence[Message], cut: int, head_end: int) -> int:
    """A cut on a tool result moves back before the assistant that made the call."""
    j = cut
    while j > head_end and j < len(messages) and role_of(messages[j]) == "tool":
        j -= 1
    if j < len(messages) and j != cut and has_tool_calls(messages[j]):
        return j
    k = cut
    while k < len(messages) and role_of(messages[k]) == "tool":
        k += 1
    return k


def _last_real_user(messages: Sequence[Message], lower: int) -> int:
    for i in range(len(messages) - 1, lower - 1, -1):
        if _is_real_user(messages[i]):
            return i
    return -1


def find_tail_cut(
    messages: Sequence[Message],
    head_end: int,
    *,
    budget: int,
    floor: int,
    keep_last_turns: int | None = None,
) -> int:
    """Index of the first tail message (== len(messages) only when nothing fits)."""
    n = len(messages)
    if keep_last_turns is not None and keep_last_turns >= 0:
        cut = n
        seen = 0
        for i in range(n - 1, head_end - 1, -1):
            if seen >= keep_last_turns:
                break
            if _is_real_user(messages[i]):
                seen += 1
                cut = i
        if keep_last_turns == 0:
            cut = n
    else:
        available = n - head_end
        min_tail = min(floor, max(available - 1, 0))
        cut = tail_start_by_tokens(messages, budget, min_tail, lower=head_end)
        cut = _align_back(messages, cut, head_end)
        last_user = _last_real_user(messages, head_end)
        if 0 <= last_user < cut:
            cut = last_user
    for i in range(n - 1, max(cut, head_end) - 1, -1):
        if is_summary(messages[i]):
            cut = _align_back(messages, i + 1, head_end)
            break
    return max(cut, head_end)


def _collide(a: str | None, b: str | None) -> bool:
    return a is not None and a == b and a in ("user", "assistant")


def _choose(prev: str | None, first_tail: str | None, user_survives: bool) -> tuple[str, bool] | None:
    options: list[tuple[str, bool]] = []
    if first_tail is None:
        options += [("assistant", False), ("user", False)]
    elif not user_survives:
        options.append(("assistant", True))
    options += [("user", False), ("assistant", False)]
    for role, cont in options:
        seq = [prev, role] + (["user"] if cont else []) + [first_tail]
        if not any(_collide(x, y) for x, y in zip(seq, seq[1:], strict=False)):
            return role, cont
    return None


def _role_at(messages: Sequence[Message], i: int) -> str | None:
    if i < 0 or i >= len(messages):
        return None
    role = role_of(messages[i])
    return role if role in ("user", "assistant", "tool") else None


def _try(messages: Sequence[Message], head_end: int, cut: int) -> Layout | None:
    if cut <= head_end or cut > len(messages):
        return None
    kept = list(range(head_end)) + list(range(cut, len(messages)))
    survives = any(_is_real_user(messages[i]) for i in kept)
    prev = _role_at(messages, head_end - 1) if head_end > 0 else None
    if prev == "tool":
        prev = None
    chosen = _choose(prev, _role_at(messages, cut), survives)
    if chosen is None:
        return None
    return Layout(head_end=head_end, cut=cut, summary_role=chosen[0], continuation=chosen[1])


def plan_layout(messages: Sequence[Message], head_end: int, cut: int) -> Layout | None:
    """A layout with a non-empty middle whose roles alternate, or None when none exists."""
    layout = _try(messages, head_end, cut)
    if layout is not None:
        return layout
    last_user = _last_real_user(messages, head_end)
    for j in range(cut - 1, head_end, -1):
        if role_of(messages[j]) != "tool" and (layout := _try(messages, head_end, j)):
            return layout
    limit = last_user if last_user >= cut else len(messages) - 1
    for j in range(cut + 1, limit + 1):
        if role_of(messages[j]) != "tool" and (layout := _try(messages, head_end, j)):
            return layout
    system_only = 1 if messages and role_of(messages[0]) == "system" else 0
    if system_only < head_end:
        return plan_layout(messages, system_only, cut)
    return None
