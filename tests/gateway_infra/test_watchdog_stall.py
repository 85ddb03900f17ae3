"""The loop-lag watchdog logs the blocked loop's stack from its helper thread."""

from __future__ import annotations

import asyncio
import time

import pytest
from structlog.testing import capture_logs

from gateway.metrics import GatewayMetrics
from gateway.watchdog import LoopWatchdog


def _block_the_loop_for_a_while() -> None:
    time.sleep(1.5)  # deliberately blocking: the bug the watchdog exists to expose


async def test_a_blocked_loop_is_reported_with_the_blocking_function() -> None:
    metrics = GatewayMetrics()
    with capture_logs() as logs:
        async with LoopWatchdog(interval_s=0.05, threshold_s=0.5, metrics=metrics) as dog:
            await asyncio.sleep(0.15)
            assert dog.healthy()
            _block_the_loop_for_a_while()
            await asyncio.sleep(0.15)
    stalls = [e for e in logs if e["event"] == "event_loop_stalled"]
    assert len(stalls) == 1
    assert "_block_the_loop_for_a_while" in stalls[0]["loop_stack"]
    assert any("_block_the_loop_for_a_while" in s for s in stalls[0]["threads"].values())
    assert stalls[0]["log_level"] == "error"
    assert any(e["event"] == "event_loop_resumed" for e in logs)
    assert dog.stalls == 1
    assert metrics.registry.get_sample_value("hermes_event_loop_stalls_total") == 1


async def test_a_responsive_loop_reports_nothing() -> None:
    with capture_logs() as logs:
        async with LoopWatchdog(interval_s=0.02, threshold_s=0.5) as dog:
            for _ in range(10):
                await asyncio.sleep(0.01)
    assert not [e for e in logs if e["event"] == "event_loop_stalled"]
    assert dog.stalls == 0


def test_rejects_nonsense_settings() -> None:
    with pytest.raises(ValueError):
        LoopWatchdog(threshold_s=0)
