"""Supervision: crashes restart with growing backoff, stalls restart, auth errors are fatal."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.fake import FakeAdapter
from gateway.events import OutboundMessage, SendResult
from gateway.metrics import GatewayMetrics
from gateway.ports import AdapterAuthError, AdapterContext, AdapterError, BasePlatformAdapter
from gateway.supervisor import AdapterState, SupervisorSettings
from tests.gateway_infra.helpers import Inbound, RecordingSleep, make_supervisor, until


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _restarts(metrics: GatewayMetrics, adapter: str) -> float | None:
    return metrics.registry.get_sample_value("hermes_adapter_restarts_total", {"adapter": adapter})


async def test_crashing_adapter_restarts_with_growing_jittered_delays(tmp_path: Path) -> None:
    fake = FakeAdapter("fake")
    fake.crash_after(0, times=3)
    sleep, metrics = RecordingSleep(), GatewayMetrics()
    rands = iter([0.9, 0.0, 0.5])
    sup = make_supervisor(
        {"fake": fake}, tmp_path, sleep=sleep, metrics=metrics, random=lambda: next(rands)
    )
    async with sup:
        await until(lambda: fake.starts == 4 and fake.connected)
        status = sup.status("fake")
        assert status.state is AdapterState.CONNECTED
        assert status.restarts == 3
        assert "scripted crash" in (status.last_error or "")
    assert len(sleep.delays) == 3
    assert sleep.delays[0] < sleep.delays[1] < sleep.delays[2]
    for delay, nominal in zip(sleep.delays, (1.0, 2.0, 4.0), strict=True):
        assert nominal * 0.75 <= delay <= nominal
    assert _restarts(metrics, "fake") == 3


@given(rands=st.lists(st.floats(0.0, 1.0), min_size=12, max_size=12))
def test_the_default_restart_backoff_grows_until_the_cap_and_never_exceeds_it(
    rands: list[float],
) -> None:
    policy = SupervisorSettings().backoff
    delays = [policy.delay(i + 1, r) for i, r in enumerate(rands)]
    assert all(d <= 300.0 for d in delays)
    uncapped = [d for i, d in enumerate(delays) if 1.0 * 2**i < 300.0]
    assert all(a < b for a, b in zip(uncapped, uncapped[1:], strict=False))


async def test_stalled_adapter_is_stopped_and_restarted(tmp_path: Path) -> None:
    fake = FakeAdapter("fake", liveness_window_s=0.2, progress_interval_s=0.01)
    sup = make_supervisor({"fake": fake}, tmp_path)
    async with sup:
        await fake.wait_connected()
        fake.stall()
        await until(lambda: fake.starts == 2 and fake.connected)
        status = sup.status("fake")
        assert status.restarts == 1
        assert "no progress" in (status.last_error or "")
        assert fake.stops >= 1


async def test_status_never_says_connected_while_nothing_flows(tmp_path: Path) -> None:
    clock = _Clock()
    fake = FakeAdapter("fake", liveness_window_s=5.0, progress_interval_s=0.01)
    sup = make_supervisor({"fake": fake}, tmp_path, clock=clock, check_interval_s=60.0)
    async with sup:
        await fake.wait_connected()
        assert sup.status("fake").state is AdapterState.CONNECTED
        fake.stall()
        await asyncio.sleep(0.05)
        clock.now += 6.0
        assert sup.status("fake").state is AdapterState.STALLED
        assert sup.readiness()[0] is False


async def test_auth_error_is_fatal_and_never_restarted(tmp_path: Path) -> None:
    fake = FakeAdapter("fake")
    fake.raise_on_start(
        AdapterAuthError("Unauthorized for bot123456789:AAHxyzSECRETsecretSECRETsecret12")
    )
    sleep = RecordingSleep()
    sup = make_supervisor({"fake": fake}, tmp_path, sleep=sleep)
    async with sup:
        assert await sup.wait_started(5.0)
        await asyncio.sleep(0.05)
        status = sup.status("fake")
        assert status.state is AdapterState.FAILED_FATAL
        assert status.restarts == 0
        assert fake.starts == 1
        assert sleep.delays == []
        assert "SECRETsecret" not in (status.last_error or "")
        assert "Unauthorized" in (status.last_error or "")
        assert sup.all_fatal()
        assert not [t for t in asyncio.all_tasks() if t.get_name() == "adapter:fake"]


async def test_all_fatal_only_when_every_adapter_failed_fatally(tmp_path: Path) -> None:
    a, b, c = FakeAdapter("a"), FakeAdapter("b"), FakeAdapter("c")
    a.raise_on_start(AdapterAuthError("bad token"))
    b.raise_on_start(AdapterAuthError("bad token"))
    async with make_supervisor({"a": a, "b": b}, tmp_path) as both_bad:
        assert await both_bad.wait_started(5.0)
        assert both_bad.all_fatal()
    a.raise_on_start(AdapterAuthError("bad token"))
    async with make_supervisor({"a": a, "c": c}, tmp_path) as one_bad:
        assert await one_bad.wait_started(5.0)
        assert not one_bad.all_fatal()
        assert one_bad.status("c").state is AdapterState.CONNECTED


async def test_slow_connect_times_out_without_blocking_the_fast_adapter(tmp_path: Path) -> None:
    fast, slow = FakeAdapter("fast"), FakeAdapter("slow")
    slow.hold_connect()
    sup = make_supervisor(
        {"slow": slow, "fast": fast},
        tmp_path,
        connect_timeout_s=0.1,
        sleep=RecordingSleep(hold=True),
    )
    async with sup:
        assert await sup.wait_started(5.0)
        assert sup.status("fast").state is AdapterState.CONNECTED
        await until(lambda: sup.status("slow").state is AdapterState.BACKOFF)
        assert "connect timeout" in (sup.status("slow").last_error or "")
        ready, reasons = sup.readiness()
        assert not ready and any("slow" in r for r in reasons)


class _ReturnsEarly(BasePlatformAdapter):
    def __init__(self) -> None:
        self.starts = 0

    async def start(self, ctx: AdapterContext) -> None:
        self.starts += 1
        ctx.connected()

    async def stop(self) -> None:
        pass

    async def send(self, message: OutboundMessage) -> SendResult:
        return SendResult.success("1")


async def test_start_returning_while_not_stopping_is_a_crash(tmp_path: Path) -> None:
    adapter = _ReturnsEarly()
    sup = make_supervisor({"early": adapter}, tmp_path)
    async with sup:
        await until(lambda: adapter.starts >= 3)
        status = sup.status("early")
        assert status.restarts >= 2
        assert "returned" in (status.last_error or "")


async def test_crash_message_secrets_are_redacted(tmp_path: Path) -> None:
    class _Leaky(FakeAdapter):
        async def start(self, ctx: AdapterContext) -> None:
            self.starts += 1
            raise AdapterError("GET https://api.example/bot?token=s3cr3tvalue99 failed\nmore")

    leaky = _Leaky("leaky")
    sup = make_supervisor({"leaky": leaky}, tmp_path, sleep=RecordingSleep(hold=True))
    async with sup:
        await until(lambda: sup.status("leaky").state is AdapterState.BACKOFF)
        error = sup.status("leaky").last_error or ""
    assert "s3cr3tvalue99" not in error
    assert "more" not in error and error.startswith("AdapterError")


@pytest.mark.parametrize("healthy_after_s", [0.0])
async def test_a_healthy_run_resets_the_backoff(tmp_path: Path, healthy_after_s: float) -> None:
    fake = FakeAdapter("fake", progress_interval_s=0.01)
    fake.crash_after(3, times=3)
    sleep = RecordingSleep()
    sup = make_supervisor(
        {"fake": fake}, tmp_path, sleep=sleep, healthy_after_s=healthy_after_s, random=lambda: 0.0
    )
    async with sup:
        await until(lambda: fake.starts == 4 and fake.connected)
    assert sleep.delays == [1.0, 1.0, 1.0]


async def test_emit_records_inbound_and_metrics(tmp_path: Path) -> None:
    fake, inbound, metrics = FakeAdapter("fake"), Inbound(), GatewayMetrics()
    sup = make_supervisor({"fake": fake}, tmp_path, inbound=inbound, metrics=metrics)
    async with sup:
        await fake.wait_connected()
        assert sup.status("fake").last_inbound_at is None
        first = await fake.inject("hi", event_id="e1")
        again = await fake.inject("hi", event_id="e1")
        sup.activity.note_outbound("fake")
        status = sup.status("fake")
    assert first.new and not again.new
    assert [e.text for e in inbound.events] == ["hi"]
    assert status.last_inbound_at is not None and status.last_outbound_at is not None
    sample = metrics.registry.get_sample_value
    assert sample("hermes_events_in_total", {"platform": "fake", "outcome": "new"}) == 1
    assert sample("hermes_events_in_total", {"platform": "fake", "outcome": "duplicate"}) == 1
    assert sample("hermes_events_out_total", {"platform": "fake"}) == 1
