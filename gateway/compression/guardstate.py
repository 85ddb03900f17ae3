"""Storage ↔ engine guard state (`storage.GuardState` ↔ `CompressionGuards`).

Every engine field has its column in `sessions` (schema v3): cooldown until / error, fallback
streak, ineffective count, failure streak (the cooldown ladder position) and verify pending (a
compaction awaits its verdict from the next real prompt). The anti-thrash block is derived:
two ineffective compressions or two fallback uses in a row.
"""

from __future__ import annotations

from typing import Any

from agent_core.compression import CompressionGuards
from agent_core.compression.guards import BLOCK_AFTER
from storage import GuardState

__all__ = ["from_stored", "to_fields"]


def from_stored(state: GuardState) -> CompressionGuards:
    """Engine guards from the stored row. Must not raise."""
    blocked = state.ineffective_count >= BLOCK_AFTER or state.fallback_streak >= BLOCK_AFTER
    return CompressionGuards(
        cooldown_until=float(state.cooldown_until or 0.0),
        cooldown_error=state.cooldown_error,
        fallback_streak=state.fallback_streak,
        ineffective_count=state.ineffective_count,
        blocked_reason="ineffective" if blocked else None,
        failure_streak=state.failure_streak,
        verify_pending=state.verify_pending,
    )


def to_fields(guards: CompressionGuards, *, prompt_tokens: int | None = None) -> dict[str, Any]:
    """Columns to write for `guards` (keyword arguments of `update_guard`, also valid as
    session fields of `commit_rotation`). `prompt_tokens` is the real reading just observed.
    While a compaction awaits its verdict the compacted context has no reading yet, so
    `last_prompt_tokens` is cleared."""
    fields: dict[str, Any] = {
        "cooldown_until": guards.cooldown_until or None,
        "cooldown_error": guards.cooldown_error,
        "fallback_streak": guards.fallback_streak,
        "ineffective_count": guards.ineffective_count,
        "failure_streak": guards.failure_streak,
        "verify_pending": guards.verify_pending,
    }
    if guards.verify_pending:
        fields["last_prompt_tokens"] = None
    elif prompt_tokens is not None:
        fields["last_prompt_tokens"] = prompt_tokens
    return fields
