"""Durable compression guards: failure cooldown and anti-thrash, as pure functions.

The gateway stores a `CompressionGuards` per session (sessions table), reads it fresh before
every decision and stores what the engine returns, so every worker and process agrees and the
state survives a restart. Nothing here keeps state or reads a clock: callers pass `now`
(epoch seconds).

Rules:
* A transient summarizer failure (429, timeout, network) starts a cooldown on a growing
  ladder: 60 s, 300 s, 900 s, then 1,800 s for every further consecutive failure. A success
  resets the ladder. A permanent failure (401/402/403, quota) is not retried automatically:
  it sets a 3,600 s cooldown.
* A compression is ineffective when it saved less than 10 % of the tokens, or when the next
  provider-reported prompt is still at or above the threshold. A no-op or skipped compression
  counts as ineffective. Two in a row, or two consecutive uses of the deterministic fallback,
  block automatic compression with reason "ineffective" until a forced manual compression or
  a new session (a fresh `CompressionGuards()`).
* While a cooldown runs, automatic compression is blocked with reason "cooldown:<seconds>".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

__all__ = [
    "BLOCK_AFTER",
    "COOLDOWN_LADDER",
    "MIN_SAVED_FRACTION",
    "PERMANENT_FAILURE_COOLDOWN",
    "CompressionGuards",
    "blocked_reason",
    "clear_for_manual",
    "observe_prompt",
    "record_completed",
    "record_failure",
    "record_ineffective",
]

COOLDOWN_LADDER: tuple[int, ...] = (60, 300, 900, 1800)
PERMANENT_FAILURE_COOLDOWN = 3600
MIN_SAVED_FRACTION = 0.10
BLOCK_AFTER = 2


@dataclass(frozen=True, slots=True)
class CompressionGuards:
    """Per-session guard state. Plain data: `to_dict()` / `from_dict()` for storage.

    `failure_streak` is the cooldown ladder position; `verify_pending` means a compression
    completed and the next real prompt size decides whether it was effective.
    """

    cooldown_until: float = 0.0
    cooldown_error: str | None = None
    fallback_streak: int = 0
    ineffective_count: int = 0
    blocked_reason: str | None = None
    failure_streak: int = 0
    verify_pending: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> CompressionGuards:
        """Tolerant: unknown keys ignored, None/missing values take the defaults."""
        if not data:
            return cls()
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names and v is not None})


def blocked_reason(guards: CompressionGuards, now: float) -> str | None:
    """Why automatic compression is blocked right now, or None. Must not raise."""
    if guards.cooldown_until > now:
        return f"cooldown:{math.ceil(guards.cooldown_until - now)}"
    if guards.blocked_reason:
        return guards.blocked_reason
    if guards.ineffective_count >= BLOCK_AFTER or guards.fallback_streak >= BLOCK_AFTER:
        return "ineffective"
    return None


def _with_block(guards: CompressionGuards) -> CompressionGuards:
    if guards.ineffective_count >= BLOCK_AFTER or guards.fallback_streak >= BLOCK_AFTER:
        return replace(guards, blocked_reason="ineffective")
    return guards


def record_failure(
    guards: CompressionGuards, *, kind: str, reason: str, now: float
) -> CompressionGuards:
    """A summarizer failure: start the cooldown (ladder for transient, fixed for permanent)."""
    if kind == "permanent":
        seconds = PERMANENT_FAILURE_COOLDOWN
        streak = guards.failure_streak
    else:
        seconds = COOLDOWN_LADDER[min(guards.failure_streak, len(COOLDOWN_LADDER) - 1)]
        streak = guards.failure_streak + 1
    return replace(
        guards,
        cooldown_until=now + seconds,
        cooldown_error=reason[:200],
        failure_streak=streak,
    )


def record_ineffective(guards: CompressionGuards) -> CompressionGuards:
    """A no-op, skipped or too-small compression: one strike."""
    return _with_block(
        replace(guards, ineffective_count=guards.ineffective_count + 1, verify_pending=False)
    )


def record_completed(
    guards: CompressionGuards, *, saved_fraction: float, used_fallback: bool
) -> CompressionGuards:
    """A compression was committed; judges the savings. A summarized one clears the cooldown
    and the failure ladder; a fallback one keeps them (the summarizer is still failing)."""
    if used_fallback:
        g = replace(guards, fallback_streak=guards.fallback_streak + 1)
    else:
        g = replace(guards, cooldown_until=0.0, cooldown_error=None, failure_streak=0, fallback_streak=0)
    if saved_fraction < MIN_SAVED_FRACTION:
        return record_ineffective(g)
    return _with_block(replace(g, verify_pending=True))


def observe_prompt(
    guards: CompressionGuards, prompt_tokens: int, threshold: int
) -> CompressionGuards:
    """A provider-reported prompt size after a turn.

    The first reading after a compression judges it (still ≥ threshold = one strike). A reading
    below threshold otherwise ends an ineffective streak, unless automatic compression is
    already blocked (that stays until forced manual compression or a new session).
    """
    if prompt_tokens <= 0:
        return guards
    if guards.verify_pending:
        g = replace(guards, verify_pending=False)
        if prompt_tokens >= threshold:
            return record_ineffective(g)
        return g if g.blocked_reason else replace(g, ineffective_count=0)
    if prompt_tokens < threshold and not guards.blocked_reason and guards.ineffective_count:
        return replace(guards, ineffective_count=0)
    return guards


def clear_for_manual(guards: CompressionGuards) -> CompressionGuards:
    """A forced manual compression clears cooldown and anti-thrash state."""
    return CompressionGuards()
