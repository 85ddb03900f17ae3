"""The health server over real HTTP on 127.0.0.1: /healthz, /readyz, /status, /metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.fake import FakeAdapter
from gateway.health import HealthServer
from gateway.metrics import GatewayMetrics
from gateway.supervisor import AdapterSupervisor
from gateway.watchdog import LoopWatchdog
from tests.gateway_infra.helpers import make_supervisor, until


class _Storage:
    def __init__(self) -> None:
        self.writable = True

    async def probe(self) -> bool:
        return self.writable


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def _get(http: aiohttp.ClientSession, server: HealthServer, path: str) -> tuple[int, Any]:
    async with http.get(f"{server.url}{path}") as resp:
        if resp.content_type == "application/json":
            return resp.status, await resp.json()
        return resp.status, await resp.text()


def _server(sup: AdapterSupervisor, metrics: GatewayMetrics, probe: Any, **kw: Any) -> HealthServer:
    return HealthServer(
        supervisor=sup, metrics=metrics, storage_probe=probe, port=0, ephemeral=True, **kw
    )


async def test_readyz_waits_for_every_adapter_and_reflects_the_slow_one(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    fast, slow = FakeAdapter("fast"), FakeAdapter("slow")
    slow.hold_connect()
    storage, metrics = _Storage(), GatewayMetrics()
    sup = make_supervisor({"slow": slow, "fast": fast}, tmp_path, metrics=metrics)
    async with _server(sup, metrics, storage.probe) as server:
        status, body = await _get(http, server, "/readyz")
        assert status == 503 and body["ready"] is False
        async with sup:
            await fast.wait_connected()
            status, body = await _get(http, server, "/readyz")
            assert status == 503
            assert body["adapters"] == {"slow": "starting", "fast": "connected"}
            assert any("slow" in r for r in body["reasons"])
            assert not any("fast" in r for r in body["reasons"])

            slow.release_connect()
            await slow.wait_connected()
            status, body = await _get(http, server, "/readyz")
            assert (status, body["ready"], body["reasons"]) == (200, True, [])

            storage.writable = False
            status, body = await _get(http, server, "/readyz")
            assert status == 503 and body["reasons"] == ["storage is not writable"]


async def test_readyz_is_503_when_the_storage_probe_raises(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    def broken() -> bool:
        raise OSError("disk I/O error password=hunter22")

    fake, metrics = FakeAdapter("fake"), GatewayMetrics()
    async with make_supervisor({"fake": fake}, tmp_path) as sup:
        await fake.wait_connected()
        async with _server(sup, metrics, broken) as server:
            status, body = await _get(http, server, "/readyz")
    assert status == 503
    assert "storage probe failed" in body["reasons"][0]
    assert "hunter22" not in body["reasons"][0]


async def test_healthz_and_status(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    def failing() -> Any:
        raise RuntimeError("provider broke")

    async def sessions() -> dict[str, int]:
        return {"active": 3}

    fake, metrics = FakeAdapter("fake"), GatewayMetrics()
    providers = {"sessions": sessions, "queues": lambda: {"depth": 7}, "compression": failing}
    async with make_supervisor({"fake": fake}, tmp_path) as sup, LoopWatchdog() as dog:
        await fake.wait_connected()
        async with _server(
            sup, metrics, lambda: True, status_providers=providers, watchdog=dog
        ) as server:
            assert (await _get(http, server, "/healthz"))[0] == 200
            status, body = await _get(http, server, "/status")
    assert status == 200
    assert [(a["name"], a["state"]) for a in body["adapters"]] == [("fake", "connected")]
    assert body["sessions"] == {"active": 3}
    assert body["queues"] == {"depth": 7}
    assert body["compression"]["error"].startswith("RuntimeError")
    assert set(body["loop"]) >= {"last_lag_s", "stalls"}


async def test_metrics_exposes_the_gateway_counters(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    fake, metrics = FakeAdapter("fake"), GatewayMetrics()
    fake.crash_after(0, times=2)
    sup = make_supervisor({"fake": fake}, tmp_path, metrics=metrics)
    async with sup, _server(sup, metrics, lambda: True) as server:
        await until(lambda: fake.starts == 3 and fake.connected)
        await fake.inject("hello")
        sup.activity.note_outbound("fake")
        metrics.observe_turn(0.3)
        metrics.add_tokens(prompt=120, completion=30)
        metrics.compression_outcome("compressed")
        metrics.compression_outcome("deferred")
        status, text = await _get(http, server, "/metrics")
    assert status == 200
    for line in (
        'hermes_adapter_restarts_total{adapter="fake"} 2.0',
        'hermes_events_in_total{outcome="new",platform="fake"} 1.0',
        'hermes_events_out_total{platform="fake"} 1.0',
        'hermes_turns_total{outcome="ok"} 1.0',
        "hermes_turn_latency_seconds_count 1.0",
        'hermes_model_tokens_total{kind="prompt"} 120.0',
        'hermes_model_tokens_total{kind="completion"} 30.0',
        'hermes_compressions_total{status="compressed"} 1.0',
        'hermes_compressions_total{status="deferred"} 1.0',
        'hermes_adapter_state{adapter="fake"} 2.0',
    ):
        assert line in text


async def test_two_gateways_keep_separate_registries(tmp_path: Path) -> None:
    one, two = GatewayMetrics(), GatewayMetrics()
    one.observe_turn(1.0)
    assert one.registry.get_sample_value("hermes_turns_total", {"outcome": "ok"}) == 1
    assert two.registry.get_sample_value("hermes_turns_total", {"outcome": "ok"}) is None


async def test_port_zero_without_ephemeral_is_off(tmp_path: Path) -> None:
    sup = make_supervisor({}, tmp_path)
    server = HealthServer(
        supervisor=sup, metrics=GatewayMetrics(), storage_probe=lambda: True, port=0
    )
    async with server:
        assert not server.enabled
        assert server.port is None and server.url is None
