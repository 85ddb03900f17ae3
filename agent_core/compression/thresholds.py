"""When to compress, and how big the protected tail and the summary may be.

threshold = min(context_length × percent, threshold_tokens when set)

* `percent` is `threshold_percent` (default 0.50), or the `model_thresholds` entry whose key is
  the longest case-insensitive substring of the model name.
* Small-window floor: for windows under 512,000 tokens the global `threshold_percent` is raised
  to at least 0.75 (`SMALL_WINDOW_FLOOR_PERCENT`). Below that size half the window is too little
  room for a conversation to make progress between compressions, and the summary, the protected
  tail and the next turns must all fit after a compression. The floor only raises, and it does
  not apply to an explicit `model_thresholds` entry: that is a deliberate per-model choice.
* The percent is clamped to [0.05, 0.95]; the result to [1, context_length − 1] and at least
  `MIN_THRESHOLD_TOKENS` when the window allows, so any window from 8,000 tokens up works.

Tail budget = threshold × summary_target_ratio, the ratio clamped to [0.10, 0.80].
Summary budget = 20 % of the summarized tokens, at least 1,000, at most min(12,000,
5 % of the window when that is larger than 2,000, a quarter of the auxiliary window).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "MAX_SUMMARY_TOKENS",
    "MIN_THRESHOLD_TOKENS",
    "SMALL_WINDOW_FLOOR_PERCENT",
    "SMALL_WINDOW_LIMIT",
    "compute_threshold",
    "resolve_model_percent",
    "summary_budget",
    "tail_budget",
]

SMALL_WINDOW_LIMIT = 512_000
SMALL_WINDOW_FLOOR_PERCENT = 0.75
MIN_THRESHOLD_TOKENS = 2_000
MAX_SUMMARY_TOKENS = 12_000
_MIN_SUMMARY_TOKENS = 1_000
_SUMMARY_RATIO = 0.20


def resolve_model_percent(model: str | None, model_thresholds: Mapping[str, float] | None) -> float | None:
    """The `model_thresholds` value whose key is the longest substring of `model`, or None."""
    if not model or not model_thresholds:
        return None
    name = model.lower()
    best: tuple[int, float] | None = None
    for key, value in model_thresholds.items():
        k = str(key).lower()
        if k and k in name and (best is None or len(k) > best[0]):
            best = (len(k), float(value))
    return None if best is None else best[1]


def compute_threshold(
    context_length: int,
    *,
    threshold_percent: float = 0.50,
    threshold_tokens: int | None = None,
    model: str | None = None,
    model_thresholds: Mapping[str, float] | None = None,
) -> int:
    """Prompt-token count at which automatic compression triggers (see module docstring).

    Raises ValueError when `context_length` is not positive.
    """
    if context_length <= 0:
        raise ValueError("context_length must be positive")
    override = resolve_model_percent(model, model_thresholds)
    if override is not None:
        percent = override
    else:
        percent = threshold_percent
        if context_length < SMALL_WINDOW_LIMIT:
            percent = max(percent, SMALL_WINDOW_FLOOR_PERCENT)
    percent = min(max(percent, 0.05), 0.95)
    threshold = int(context_length * percent)
    if threshold_tokens is not None and threshold_tokens > 0:
        threshold = min(threshold, int(threshold_tokens))
    floor = min(MIN_THRESHOLD_TOKENS, context_length // 2)
    return max(1, min(max(threshold, floor), context_length - 1))


def tail_budget(threshold: int, summary_target_ratio: float) -> int:
    """Tokens kept verbatim at the end of the history."""
    ratio = min(max(summary_target_ratio, 0.10), 0.80)
    return max(1, int(threshold * ratio))


def summary_budget(
    middle_tokens: int,
    *,
    context_length: int,
    aux_context_length: int,
    cap: int = MAX_SUMMARY_TOKENS,
) -> int:
    """Output token budget for one summary (see module docstring)."""
    ceiling = min(cap, MAX_SUMMARY_TOKENS, max(2_000, int(context_length * 0.05)))
    ceiling = min(ceiling, max(256, aux_context_length // 4))
    wanted = max(_MIN_SUMMARY_TOKENS, int(middle_tokens * _SUMMARY_RATIO))
    return max(256, min(wanted, ceiling))
