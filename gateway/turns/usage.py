"""`UsageRecorder`: a turn's token usage, into the session's counters and the metrics."""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from agent_core.events import Usage
from gateway.metrics import GatewayMetrics
from storage.ports import UsageLedger
from storage.types import GuardState

__all__ = ["UsageRecorder"]

log = structlog.get_logger("gateway.turns")


class UsageRecorder:
    def __init__(self, ledger: UsageLedger, metrics: GatewayMetrics | None = None) -> None:
        self._ledger = ledger
        self._metrics = metrics
        #: Turns whose usage was written: the dashboard re-reads its totals when this moves.
        self.recorded = 0

    async def record(self, session_id: str, usage: Sequence[Usage]) -> GuardState | None:
        """Add the turn's usage (one entry per model call). Returns the compression guard
        state from before it (None when nothing was recorded). Must not raise."""
        if not usage:
            return None
        stored = None
        prompt = sum(x.prompt_tokens for x in usage)
        completion = sum(x.completion_tokens for x in usage)
        try:
            stored = await self._ledger.add_usage(
                session_id,
                input_tokens=prompt,
                output_tokens=completion,
                cache_read_tokens=sum(x.cached_tokens for x in usage),
                reasoning_tokens=sum(x.reasoning_tokens for x in usage),
                api_calls=len(usage),
                last_prompt_tokens=usage[-1].prompt_tokens or None,
            )
            self.recorded += 1
        except Exception as exc:  # noqa: BLE001 - the reply is out; only counters are lost
            log.warning("usage_not_recorded", session_id=session_id, error=type(exc).__name__)
        if self._metrics is not None:
            self._metrics.add_tokens(prompt=prompt, completion=completion)
        return stored
