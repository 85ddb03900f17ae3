"""Storage ↔ engine guard state (`storage.GuardState` ↔ `CompressionGuards`).

The sessions table has columns for the cooldown, its error text, the fallback streak and the
ineffective count. Two engine fields have no column of their own and are encoded:

* `verify_pending` (a compression completed; the next real prompt judges it) is stored as
  `last_prompt_tokens = -1` ("just compacted, no real reading yet").
* `failure_streak` (the cooldown ladder position) rides at the end of `cooldown_error` as
  ` [failures=N]`; `error_text()` strips it for display.

The anti-thrash block is derived: two ineffective compressions or two fallback uses in a row.
"""

from __future__ import annotations

import re
from typing import Any

from agent_core.compression import CompressionGuards
from agent_core.compression.guards import BLOCK_AFTER
from storage import GuardState

__all__ = ["JUST_COMPACTED", "error_text", "from_stored", "to_fields"]

JUST_COMPACTED = -1
_STREAK_RE = re.compile(r"\s*\[failures=(\d+)\]\s*$")


def error_text(stored: str | None) -> str | None:
    """The stored cooldown error without its ladder suffix."""
    if stored is None:
        return None
    return _STREAK_RE.sub("", stored) or None


def from_stored(state: GuardState) -> CompressionGuards:
    """Engine guards from the stored row. Must not raise."""
    match = _STREAK_RE.search(state.cooldown_error or "")
    blocked = state.ineffective_count >= BLOCK_AFTER or state.fallback_streak >= BLOCK_AFTER
    return CompressionGuards(
        cooldown_until=float(state.cooldown_until or 0.0),
        cooldown_error=error_text(state.cooldown_error),
        fallback_streak=state.fallback_streak,
        ineffective_count=state.ineffective_count,
        blocked_reason="ineffective" if blocked else None,
        failure_streak=int(match.group(1)) if match else 0,
        verify_pending=state.last_prompt_tokens == JUST_COMPACTED,
    )


def to_fields(
    guards: CompressionGuards,
    *,
    prompt_tokens: int | None = None,
    stored_prompt: int | None = None,
) -> dict[str, Any]:
    """Columns to write for `guards` (keyword arguments of `update_guard`, also valid as
    session fields of `commit_rotation`). `prompt_tokens` is the real reading just observed;
    it is stored unless a compression still awaits its verification reading. `stored_prompt`
    is the `last_prompt_tokens` read with the guards (clears a stale "just compacted")."""
    error = guards.cooldown_error
    if guards.failure_streak:
        error = f"{error or 'summarizer failure'} [failures={guards.failure_streak}]"
    fields: dict[str, Any] = {
        "cooldown_until": guards.cooldown_until or None,
        "cooldown_error": error,
        "fallback_streak": guards.fallback_streak,
        "ineffective_count": guards.ineffective_count,
    }
    if guards.verify_pending:
        fields["last_prompt_tokens"] = JUST_COMPACTED
    elif prompt_tokens is not None:
        fields["last_prompt_tokens"] = prompt_tokens
    elif stored_prompt == JUST_COMPACTED:
        fields["last_prompt_tokens"] = None
    return fields
