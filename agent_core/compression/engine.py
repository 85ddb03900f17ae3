"""The context-engine contract and the default engine, `ContextCompressor`.

An engine is pure with respect to the outside world: messages and guard state come in,
a `CompressionResult` (new messages, updated guards) goes out; the only I/O is the injected
async `Summarizer`. The gateway runs it from a compression worker, persists the returned
guards, and commits the messages behind its lease and commit fence.

Other engines are found by entry point group `hermes.context_engines` (`load_engine`).
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from importlib.metadata import entry_points
from typing import Any, ClassVar, TypeVar

from agent_core.compression.boundaries import tail_floor
from agent_core.compression.guards import (
    CompressionGuards,
    blocked_reason,
    clear_for_manual,
    observe_prompt,
    record_completed,
    record_failure,
    record_ineffective,
)
from agent_core.compression.messages import Message, call_index
from agent_core.compression.pipeline import Plan, build_fallback, finish, plan
from agent_core.compression.prune import dedup_tool_outputs, prune_before, tail_start_by_tokens
from agent_core.compression.summarize import run_stages
from agent_core.compression.thresholds import compute_threshold, tail_budget
from agent_core.compression.types import (
    COMPRESSED_SUMMARY_KEY,
    CompressionResult,
    CompressionSettings,
    CompressionStatus,
    PruneResult,
    Summarizer,
    SummarizerError,
)
from agent_core.tokens import estimate_messages

__all__ = ["ENTRY_POINT_GROUP", "ContextCompressor", "ContextEngine", "available_engines", "load_engine"]

ENTRY_POINT_GROUP = "hermes.context_engines"
_T = TypeVar("_T")


class ContextEngine(ABC):
    """What the turn loop and the compression worker call.

    * `update_from_response(usage, guards)` after every model reply; returns updated guards.
    * `should_compress(prompt_tokens, guards)` -> (decision, reason); reasons: "threshold",
      "below_threshold", "cooldown:<s>", "ineffective".
    * `compress(...)` never raises for summarizer failures; it reports them in the result.
    * `select_context(messages)` may choose what this turn sends (default: unchanged).
    * `prune_tool_results_only(messages)` is a cheap no-LLM trim.
    """

    name: ClassVar[str] = "base"

    @property
    @abstractmethod
    def threshold_tokens(self) -> int: ...

    @abstractmethod
    def update_from_response(
        self, usage: Mapping[str, Any] | Any, guards: CompressionGuards | None = None
    ) -> CompressionGuards: ...

    @abstractmethod
    def should_compress(
        self, prompt_tokens: int | None = None, guards: CompressionGuards | None = None
    ) -> tuple[bool, str]: ...

    @abstractmethod
    async def compress(
        self,
        messages: Sequence[Message],
        *,
        force: bool = False,
        focus: str | None = None,
        memory_context: str | None = None,
        keep_last_turns: int | None = None,
        preview: bool = False,
        guards: CompressionGuards | None = None,
    ) -> CompressionResult: ...

    def select_context(self, messages: list[Message]) -> list[Message]:
        return messages

    def prune_tool_results_only(self, messages: Sequence[Message]) -> PruneResult:
        return PruneResult(messages=list(messages))


def _prompt_tokens(usage: Mapping[str, Any] | Any) -> int:
    for key in ("prompt_tokens", "input_tokens"):
        value = usage.get(key) if isinstance(usage, Mapping) else getattr(usage, key, None)
        if isinstance(value, int | float) and value > 0:
            return int(value)
    return 0


class ContextCompressor(ContextEngine):
    """The five-step compressor (prune, head, tail, summarize, iterate).

    `summarizer` may be None: then only the deterministic fallback (if configured) or preview
    works. `clock` returns epoch seconds (guards, today's date). CPU work of histories with at
    least `offload_at` messages runs in a worker thread so an event loop stays responsive.
    """

    name: ClassVar[str] = "compressor"

    def __init__(
        self,
        summarizer: Summarizer | None = None,
        *,
        context_length: int,
        model: str = "",
        settings: CompressionSettings | None = None,
        clock: Callable[[], float] = time.time,
        offload_at: int = 300,
    ) -> None:
        self.summarizer = summarizer
        self.settings = settings or CompressionSettings()
        self.clock = clock
        self.offload_at = offload_at
        self.last_prompt_tokens = 0
        self.update_model(model, context_length)

    def update_model(self, model: str, context_length: int) -> None:
        """Recompute the threshold for a (new) model and window."""
        s = self.settings
        self.model = model
        self.context_length = context_length
        self._threshold = compute_threshold(
            context_length,
            threshold_percent=s.threshold_percent,
            threshold_tokens=s.threshold_tokens,
            model=model,
            model_thresholds=s.model_thresholds,
        )
        self.tail_budget = tail_budget(self._threshold, s.summary_target_ratio)

    @property
    def threshold_tokens(self) -> int:
        return self._threshold

    def update_from_response(
        self, usage: Mapping[str, Any] | Any, guards: CompressionGuards | None = None
    ) -> CompressionGuards:
        """Record provider-reported usage; judges a pending compression. Must not raise."""
        tokens = _prompt_tokens(usage)
        if tokens:
            self.last_prompt_tokens = tokens
        return observe_prompt(guards or CompressionGuards(), tokens, self._threshold)

    def should_compress(
        self, prompt_tokens: int | None = None, guards: CompressionGuards | None = None
    ) -> tuple[bool, str]:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        if tokens < self._threshold:
            return False, "below_threshold"
        reason = blocked_reason(guards or CompressionGuards(), self.clock())
        if reason:
            return False, reason
        return True, "threshold"

    def prune_tool_results_only(self, messages: Sequence[Message]) -> PruneResult:
        """Dedup identical tool outputs and describe/cut old ones outside the protected tail.
        No LLM, no guards; returns a new list (inputs untouched). Must not raise."""
        work = list(messages)
        before = estimate_messages(work)
        floor = tail_floor(self.settings.protect_last_n)
        boundary = tail_start_by_tokens(work, self.tail_budget, floor)
        deduped = dedup_tool_outputs(work)
        pruned, truncated = prune_before(work, boundary, index=call_index(work))
        return PruneResult(
            messages=work,
            pruned=pruned,
            deduplicated=deduped,
            truncated_arguments=truncated,
            tokens_before=before,
            tokens_after=estimate_messages(work),
        )

    async def _cpu(self, size: int, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        if size >= self.offload_at:
            return await asyncio.to_thread(fn, *args, **kwargs)
        return fn(*args, **kwargs)

    def _today(self, now: float) -> date | None:
        try:
            return datetime.fromtimestamp(now).date()
        except (OverflowError, OSError, ValueError):
            return None

    async def compress(
        self,
        messages: Sequence[Message],
        *,
        force: bool = False,
        focus: str | None = None,
        memory_context: str | None = None,
        keep_last_turns: int | None = None,
        preview: bool = False,
        guards: CompressionGuards | None = None,
    ) -> CompressionResult:
        """Compress `messages` (never mutated; only the `_tok` token cache key may be added).

        Statuses: "compressed" (new history + summary), "noop" (nothing to compress; counts as
        ineffective), "skipped" (blocked by guards or the feasibility rule), "failed" (the
        summarizer failed and no fallback applies; history unchanged, cooldown recorded),
        "preview" (what would happen; nothing changes). Never raises for summarizer errors.
        """
        now = self.clock()
        g = guards or CompressionGuards()
        if force:
            g = clear_for_manual(g)
        elif not preview and (why := blocked_reason(g, now)):
            return CompressionResult("skipped", list(messages), g, reason=f"blocked: {why}")
        today = self._today(now)
        p: Plan = await self._cpu(
            len(messages),
            plan,
            messages,
            settings=self.settings,
            threshold=self._threshold,
            context_length=self.context_length,
            tail_budget_tokens=self.tail_budget,
            keep_last_turns=keep_last_turns,
            focus=focus,
            memory_context=memory_context,
            today=today,
        )
        base: dict[str, Any] = {"tokens_before": p.tokens_before, "details": p.details()}
        if p.noop_reason:
            g2 = g if preview else record_ineffective(g)
            status: CompressionStatus = "preview" if preview else "noop"
            return CompressionResult(status, list(messages), g2, reason=p.noop_reason, **base)
        if preview:
            return CompressionResult(
                "preview",
                list(messages),
                g,
                reason="preview: nothing was changed",
                summarized_messages=len(p.turns),
                summarizer_calls=len(p.rendered.chunks),
                summarizer_prompt_chars=p.prompt_chars_estimate,
                **base,
            )
        s = self.settings
        used_fallback = False
        report = None
        reason = ""
        tiny = p.middle_tokens < self._threshold * s.feasibility_skip_fraction
        if not force and g.ineffective_count >= 1 and tiny:
            if not s.deterministic_fallback:
                return CompressionResult(
                    "skipped",
                    list(messages),
                    record_ineffective(g),
                    reason="skipped: the compressible middle is too small to be worth a summary",
                    **base,
                )
            body = build_fallback(p, reason="feasibility skip (middle too small)")
            used_fallback = True
        elif self.summarizer is None:
            if not s.deterministic_fallback:
                return CompressionResult(
                    "failed", list(messages), g, reason="no summarizer configured", **base
                )
            body = build_fallback(p, reason="no summarizer configured")
            used_fallback = True
        else:
            try:
                report = await run_stages(
                    self.summarizer,
                    p.rendered.chunks,
                    previous=p.previous,
                    budget=p.budget,
                    previous_tokens=p.previous_tokens,
                    focus=focus,
                    memory_context=memory_context,
                    today=today,
                    markers=p.rendered.skill_markers,
                )
                body = report.summary
            except SummarizerError as exc:
                g = record_failure(g, kind=exc.kind, reason=exc.reason, now=now)
                reason = f"summarizer failed ({exc.kind}): {exc.reason}"
                if exc.kind == "permanent" or s.abort_on_summary_failure or not s.deterministic_fallback:
                    return CompressionResult(
                        "failed",
                        list(messages),
                        g,
                        reason=f"{reason}; history unchanged",
                        summarizer_calls=1,
                        **base,
                    )
                body = build_fallback(p, reason=exc.reason)
                used_fallback = True
        out = await self._cpu(len(p.work), finish, p, body)
        after = estimate_messages(out)
        saved = 1.0 - after / p.tokens_before if p.tokens_before else 0.0
        g = record_completed(g, saved_fraction=saved, used_fallback=used_fallback)
        return CompressionResult(
            "compressed",
            out,
            g,
            reason=reason or ("fallback marker inserted" if used_fallback else "compressed"),
            summary=next((m["content"] for m in out if m.get(COMPRESSED_SUMMARY_KEY)), None),
            tokens_after=after,
            summarized_messages=len(p.turns),
            dropped_messages=len(p.turns) if used_fallback else 0,
            pruned_tool_results=p.pruned,
            deduplicated_tool_results=p.deduped,
            used_fallback=used_fallback,
            summarizer_calls=report.calls if report else 0,
            summarizer_prompt_chars=report.max_prompt_chars if report else 0,
            summarizer_prompt_tokens=report.max_prompt_tokens if report else 0,
            **base,
        )


def available_engines() -> dict[str, Any]:
    """Engine name -> entry point, including the built-in "compressor"."""
    found: dict[str, Any] = {"compressor": ContextCompressor}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return found


def load_engine(name: str | None = None, /, **kwargs: Any) -> ContextEngine:
    """Instantiate engine `name` (None or "compressor" = `ContextCompressor`) with `kwargs`.

    Raises LookupError for an unknown name and TypeError when the loaded object is not a
    `ContextEngine` subclass.
    """
    if not name or name in ("compressor", "default"):
        return ContextCompressor(**kwargs)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            cls = ep.load()
            if not (isinstance(cls, type) and issubclass(cls, ContextEngine)):
                raise TypeError(f"entry point {name!r} is not a ContextEngine subclass")
            return cls(**kwargs)
    raise LookupError(f"no context engine named {name!r} in {ENTRY_POINT_GROUP}")
