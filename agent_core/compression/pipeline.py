"""The synchronous, CPU-only parts of one compression: plan (steps 1-3 and the summarizer
input) and finish (assembly). Both are pure: inputs are never mutated (copy-on-write), except
for the `_tok` token-cache key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from agent_core.compression.assemble import assemble, drop_blank_echoes
from agent_core.compression.boundaries import (
    Layout,
    find_head_end,
    find_tail_cut,
    plan_layout,
    tail_floor,
)
from agent_core.compression.fallback import build_fallback_summary
from agent_core.compression.messages import Message, call_index, is_summary, summary_body
from agent_core.compression.prune import dedup_tool_outputs, pressure_pass, prune_before
from agent_core.compression.render import RenderedMiddle, render_middle
from agent_core.compression.summarize import prompt_overhead_tokens
from agent_core.compression.thresholds import summary_budget
from agent_core.compression.types import CompressionSettings
from agent_core.tokens import estimate_message, estimate_messages, estimate_text

__all__ = ["Plan", "build_fallback", "finish", "plan"]

_MIN_CHUNK_TOKENS = 512
_FLOOR_PER_TURN = 48  # header + a one-line gist: what every turn should get when room allows
_MIN_TAIL_AND_MIDDLE = 4


@dataclass(slots=True)
class Plan:
    work: list[Message]
    tokens_before: int
    noop_reason: str | None = None
    layout: Layout | None = None
    turns: list[Message] = field(default_factory=list)
    previous: str | None = None
    middle_tokens: int = 0
    budget: int = 0
    previous_tokens: int = 0
    chunk_tokens: int = 0
    rendered: RenderedMiddle = field(default_factory=lambda: RenderedMiddle(chunks=[]))
    index: dict[str, tuple[str, str]] = field(default_factory=dict)
    pruned: int = 0
    deduped: int = 0
    truncated: int = 0
    pressure_trimmed: int = 0
    prompt_chars_estimate: int = 0

    @property
    def summary_index(self) -> int:
        return self.layout.head_end if self.layout else 0

    def details(self) -> dict[str, Any]:
        lay = self.layout
        return {
            "messages": len(self.work),
            "head": lay.head_end if lay else None,
            "tail": len(self.work) - lay.cut if lay else None,
            "summarize": len(self.turns),
            "middle_tokens": self.middle_tokens,
            "summary_budget": self.budget,
            "chunks": len(self.rendered.chunks),
            "chunk_tokens": self.chunk_tokens,
            "omitted_from_prompt": self.rendered.omitted,
            "iterative": self.previous is not None,
            "pruned": self.pruned,
            "deduplicated": self.deduped,
            "truncated_arguments": self.truncated,
            "pressure_trimmed": self.pressure_trimmed,
        }


def plan(
    messages: Sequence[Message],
    *,
    settings: CompressionSettings,
    threshold: int,
    context_length: int,
    tail_budget_tokens: int,
    keep_last_turns: int | None,
    focus: str | None,
    memory_context: str | None,
    today: date | None,
) -> Plan:
    """Steps 1-3 plus the bounded summarizer input. Must not raise for well-formed histories."""
    tokens_before = estimate_messages(messages)
    work = drop_blank_echoes(messages)
    p = Plan(work=work, tokens_before=tokens_before)
    decayed = any(is_summary(m) for m in work)
    head_end = find_head_end(work, settings.protect_first_n, decayed)
    if len(work) < head_end + _MIN_TAIL_AND_MIDDLE:
        p.noop_reason = "nothing to compress: too few messages after the protected head"
        return p
    p.index = call_index(work)
    p.deduped = dedup_tool_outputs(work)
    floor = tail_floor(settings.protect_last_n)
    cut = find_tail_cut(
        work, head_end, budget=tail_budget_tokens, floor=floor, keep_last_turns=keep_last_turns
    )
    layout = plan_layout(work, head_end, cut)
    if layout is None:
        p.noop_reason = "nothing to compress: no middle between the protected head and tail"
        return p
    middle = work[layout.head_end : layout.cut]
    summaries: list[Message] = []
    for m in middle:
        (summaries if is_summary(m) else p.turns).append(m)
    if not p.turns:
        p.noop_reason = "nothing to compress: the middle holds only the previous summary"
        return p
    p.layout = layout
    if summaries:
        p.previous = "\n\n".join(b for b in (summary_body(m) for m in summaries) if b) or None
    p.pruned, p.truncated = prune_before(work, layout.head_end, index=p.index)
    p.pressure_trimmed = pressure_pass(work, layout.cut, tail_budget_tokens, p.index)
    turn_tokens = [estimate_message(m) for m in p.turns]
    p.middle_tokens = sum(turn_tokens)
    prev_tokens = estimate_text(p.previous) if p.previous else 0
    p.budget = summary_budget(
        p.middle_tokens + prev_tokens,
        context_length=context_length,
        aux_context_length=settings.aux_context_length,
        cap=settings.max_summary_tokens,
    )
    _size_chunks(p, settings, focus, memory_context, today)
    wanted = max(p.budget * settings.summarizer_input_ratio, len(p.turns) * _FLOOR_PER_TURN)
    p.rendered = render_middle(
        p.turns,
        p.index,
        chunk_tokens=p.chunk_tokens,
        max_chunks=settings.max_summarizer_calls,
        max_total_tokens=int(wanted),
        tokens=turn_tokens,
    )
    overhead_chars = 4 * prompt_overhead_tokens(
        budget=p.budget, focus=focus, memory_context=memory_context, today=today
    )
    biggest = max((len(c) for c in p.rendered.chunks), default=0)
    p.prompt_chars_estimate = biggest + overhead_chars + 4 * p.previous_tokens
    return p


def _size_chunks(
    p: Plan,
    settings: CompressionSettings,
    focus: str | None,
    memory_context: str | None,
    today: date | None,
) -> None:
    """Split the auxiliary window: output budget, fixed prompt text, previous summary, turns,
    and a 5 % safety margin; turns get at most `summarizer_chunk_tokens` per call."""
    aux = max(2_048, settings.aux_context_length)
    overhead = prompt_overhead_tokens(
        budget=p.budget, focus=focus, memory_context=memory_context, today=today
    )
    margin = max(128, aux // 20)
    prev_room = int(p.budget * 1.3)
    chunk = aux - p.budget - overhead - prev_room - margin
    if chunk < _MIN_CHUNK_TOKENS:
        prev_room = max(256, (aux - p.budget - overhead - margin) // 3)
        chunk = aux - p.budget - overhead - prev_room - margin
    p.previous_tokens = prev_room
    p.chunk_tokens = max(256, min(chunk, max(256, settings.summarizer_chunk_tokens)))


def build_fallback(p: Plan, *, reason: str) -> str:
    """The deterministic fallback body for a plan (no LLM)."""
    return build_fallback_summary(
        p.turns, p.index, previous=p.previous, reason=reason, markers=p.rendered.skill_markers
    )


def finish(p: Plan, body: str) -> list[Message]:
    """Assemble the compressed history for a successful plan."""
    assert p.layout is not None
    return assemble(p.work, p.layout, body)
