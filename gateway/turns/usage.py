"""`UsageRecorder`: a turn's token usage, into the session's counters and the metrics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import structlog

from agent_core.events import Usage
from gateway.metrics import GatewayMetrics
from gateway.usage_tally import UsageTally
from storage.ports import UsageLedger
from storage.types import GuardState, UsageDelta

__all__ = ["UsageRecorder"]

log = structlog.get_logger("gateway.turns")


class UsageRecorder:
    def __init__(self, ledger: UsageLedger, metrics: GatewayMetrics | None = None,
                 tally: UsageTally | None = None) -> None:
        self._ledger = ledger
        self._metrics = metrics
        self._tally = tally

    async def record(self, session_id: str, usage: Sequence[Usage],
                     delegated: Sequence[Usage] = (), *,
                     started_at: float | None = None) -> GuardState | None:
        """Add the turn's usage (one entry per model call) and its subagents' (`delegated`:
        their tokens and calls count, but the context size the compression check reads is the
        turn's own last prompt) to the session (which started at `started_at`, for the
        dashboard's tally). Returns the compression guard state from before it (None when
        nothing was recorded). Must not raise."""
        delta = self.delta(usage, delegated)
        if delta is None:
            return None
        stored = None
        try:
            stored = await self._ledger.add_usage(session_id, **asdict(delta))
        except Exception as exc:  # noqa: BLE001 - the reply is out; only counters are lost
            log.warning("usage_not_recorded", session_id=session_id, error=type(exc).__name__)
            self._count(delta, None)
            return None
        self._count(delta, started_at)
        return stored

    @staticmethod
    def delta(usage: Sequence[Usage], delegated: Sequence[Usage] = ()) -> UsageDelta | None:
        """What `record` adds, for a caller that stores it with other writes
        (`LiveTranscript.append_with_final`); None when there is nothing to add."""
        if not usage and not delegated:
            return None
        calls = [*usage, *delegated]
        return UsageDelta(
            input_tokens=sum(x.prompt_tokens for x in calls),
            output_tokens=sum(x.completion_tokens for x in calls),
            cache_read_tokens=sum(x.cached_tokens for x in calls),
            reasoning_tokens=sum(x.reasoning_tokens for x in calls),
            api_calls=len(calls),
            last_prompt_tokens=(usage[-1].prompt_tokens or None) if usage else None,
        )

    def stored_with_reply(self, delta: UsageDelta, started_at: float | None) -> None:
        """`delta` was stored by the caller (with the turn's reply): count it in the metrics
        and the dashboard's tally as `record` does."""
        self._count(delta, started_at)

    def _count(self, delta: UsageDelta, started_at: float | None) -> None:
        if self._tally is not None and started_at is not None:
            self._tally.usage_recorded(started_at, delta.input_tokens, delta.output_tokens)
        if self._metrics is not None:
            self._metrics.add_tokens(prompt=delta.input_tokens, completion=delta.output_tokens)
