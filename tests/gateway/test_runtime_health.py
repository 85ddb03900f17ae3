"""Health endpoints served by the runner: /readyz follows adapter connection, /status and
/metrics show adapters, sessions, events and turns."""

from __future__ import annotations

import asyncio
import json
import os
import signal

import aiohttp
import pytest

from adapters.fake import FakeAdapter
from gateway.config import EXIT_CONFIG
from gateway.paths import ProfilePaths, ensure_profile_dirs
from gateway.ports import AdapterAuthError
from gateway.runner import GatewayRunner
from storage.errors import StoreClosedError
from tests.fakes.openai_server import hang, text
from tests.gateway.runtime_harness import make_config, runner_for


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        return resp.status, await resp.text()


async def _metric(url: str, name: str, **labels: str) -> float:
    _, body = await _get(url + "/metrics")
    total = 0.0
    for line in body.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        if head.split("{")[0] != name:
            continue
        if all(f'{k}="{v}"' in head for k, v in labels.items()):
            total += float(value)
    return total


async def test_readyz_is_503_until_the_adapter_connects(tmp_path, model):
    fake = FakeAdapter("fake")
    fake.hold_connect()
    runner = GatewayRunner(make_config(model), ensure_profile_dirs(ProfilePaths(tmp_path)),
                           adapters={"fake": fake}, health_port=0, take_locks=False)
    starting = asyncio.create_task(runner.start())
    try:
        async with asyncio.timeout(5):
            while runner.health is None or runner.health.url is None:
                await asyncio.sleep(0.01)
        url = runner.health.url
        status, body = await _get(url + "/readyz")
        assert status == 503 and "adapter fake is starting" in body
        assert (await _get(url + "/healthz"))[0] == 200
        fake.release_connect()
        await asyncio.wait_for(starting, 5)
        status, body = await _get(url + "/readyz")
        assert status == 200, body
    finally:
        if not starting.done():
            starting.cancel()
        await runner.shutdown()


async def test_status_and_metrics_show_adapters_sessions_events_and_turns(tmp_path, model):
    model.enqueue(text("one"), text("two"), hang(30))
    async with runner_for(tmp_path, model, gateway__busy_mode="queue") as (runner, fake):
        url = runner.health.url
        await fake.inject("a", chat_id="c1", user_id="u1")
        await fake.wait_turns(1)
        await fake.inject("b", chat_id="c2", user_id="u2")
        await fake.wait_turns(2)
        await fake.inject("again", event_id="dup-1", chat_id="c1", user_id="u1")
        await fake.inject("again", event_id="dup-1", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: len(model.requests) == 3)
        await asyncio.sleep(0.6)
        await fake.inject("queued", chat_id="c1", user_id="u1")

        status, body = await _get(url + "/status")
        assert status == 200
        data = json.loads(body)
        assert [a["name"] for a in data["adapters"]] == ["fake"]
        assert data["adapters"][0]["state"] == "connected"
        assert data["adapters"][0]["last_inbound_at"] is not None
        assert data["sessions"]["active"] == 2
        assert data["sessions"]["queues"] == 1 and data["sessions"]["queued"] == 1
        assert data["sessions"]["held"] == 1  # the queued message is durable
        assert "c1" not in body and "u1" not in body  # counts, not ids (expose_ids is off)
        assert data["gateway"]["rss_bytes"] > 10_000_000 and data["gateway"]["threads"] >= 2

        assert await _metric(url, "hermes_events_in_total") == 5
        assert await _metric(url, "hermes_turns_total", outcome="ok") == 2
        assert await _metric(url, "hermes_turns_total") == 2
        assert await _metric(url, "hermes_turn_latency_seconds_count") == 2
        assert await _metric(url, "hermes_events_out_total") >= 2
        assert await _metric(url, "process_resident_memory_bytes") > 10_000_000
        assert "python_gc_collections_total{generation=" in (await _get(url + "/metrics"))[1]


async def test_only_adapter_refusing_credentials_makes_run_return_78(tmp_path, model):
    fake = FakeAdapter("fake")
    fake.raise_on_start(AdapterAuthError("401 Unauthorized: token rejected"))
    runner = GatewayRunner(make_config(model), ensure_profile_dirs(ProfilePaths(tmp_path)),
                           adapters={"fake": fake}, health_port=0, take_locks=False)
    code = await asyncio.wait_for(runner.run(), 10)
    assert code == EXIT_CONFIG == 78
    assert fake.starts == 1  # fatal: never restarted


async def test_crashing_adapter_is_restarted_and_keeps_serving(tmp_path, model):
    fake = FakeAdapter("fake")
    fake.crash_after(2)
    async with runner_for(tmp_path, model, adapters={"fake": fake}) as (runner, _):
        await fake.wait_for(lambda: fake.starts == 2 and fake.connected, 10)
        status = runner.supervisor.status("fake")
        assert status.restarts == 1 and "scripted crash" in (status.last_error or "")
        assert await _metric(runner.health.url, "hermes_adapter_restarts_total") == 1
        await fake.inject("still there?", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: "echo: still there?" in fake.messages("c1"))


async def _connecting(tmp_path, model) -> tuple[GatewayRunner, FakeAdapter, asyncio.Task[int]]:
    """A runner whose `run()` has opened storage and waits for its adapter to connect."""
    fake = FakeAdapter("fake")
    fake.hold_connect()
    runner = GatewayRunner(make_config(model), ensure_profile_dirs(ProfilePaths(tmp_path)),
                           adapters={"fake": fake}, health_port=0, take_locks=False)
    run = asyncio.create_task(runner.run())
    async with asyncio.timeout(10):
        while fake.starts == 0:
            await asyncio.sleep(0.01)
    return runner, fake, run


async def test_a_sigterm_while_an_adapter_is_still_connecting_drains_and_returns_0(tmp_path, model):
    """Signals are handled from the first moment of `run()`, not once start-up is over: a
    service manager's stop that lands while a platform is still connecting is a clean drain,
    not the default action (killed on the spot, exit -15), and it does not wait out the
    connect timeout."""
    _, fake, run = await _connecting(tmp_path, model)
    assert not fake.connected
    handler = signal.getsignal(signal.SIGTERM)
    assert handler not in (signal.SIG_DFL, None), "SIGTERM would kill a starting gateway"
    os.kill(os.getpid(), signal.SIGTERM)
    # Not held up by the adapter's connect timeout (30 s) either: the stop ends the wait.
    assert await asyncio.wait_for(run, 10) == 0
    assert not fake.connected


async def test_a_writer_that_breaks_while_start_up_recovery_writes_exits_74(tmp_path, model):
    """A writer that breaks while the adapters connect, before start-up recovery (which
    writes: it claims the held events): `run()` returns 74, as it does once running (the
    next test), never a traceback, so the service manager reads it as the storage failure
    it is."""
    runner, fake, run = await _connecting(tmp_path, model)
    await runner.store._writer._conn.close()  # the connection dies under the writer
    fake.release_connect()
    assert await asyncio.wait_for(run, 15) == 74


async def test_a_storage_writer_that_breaks_stops_the_gateway_with_74(tmp_path, model):
    """When state.db's writer can no longer write (its connection went away), the gateway
    must not stay up accepting events it cannot record: `run()` drains and returns 74, so the
    service manager restarts it with a fresh connection."""
    fake = FakeAdapter("fake")
    runner = GatewayRunner(make_config(model), ensure_profile_dirs(ProfilePaths(tmp_path)),
                           adapters={"fake": fake}, health_port=0, take_locks=False)
    run = asyncio.create_task(runner.run())
    async with asyncio.timeout(10):
        while (runner.health is None or runner.health.url is None
               or (await _get(runner.health.url + "/readyz"))[0] != 200):
            await asyncio.sleep(0.02)
    await runner.store._writer._conn.close()  # the connection dies under the writer
    with pytest.raises(StoreClosedError):  # not recorded: the adapter must not ack it
        await fake.inject("anyone there?", chat_id="c1", user_id="u1")  # dedup write fails
    assert await asyncio.wait_for(run, 15) == 74


async def test_status_shows_ids_only_when_the_operator_asks(tmp_path, model):
    model.enqueue(hang(30))
    async with runner_for(tmp_path, model, gateway__busy_mode="queue",
                          gateway__health__expose_ids=True) as (runner, fake):
        await fake.inject("a", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: len(model.requests) == 1)
        await asyncio.sleep(0.6)
        await fake.inject("queued", chat_id="c1", user_id="u1")
        _, body = await _get(runner.health.url + "/status")
        assert json.loads(body)["sessions"]["queues"] == {"fake:dm:c1": 1}


async def test_a_health_token_guards_everything_but_healthz(tmp_path, model):
    async with runner_for(tmp_path, model, gateway__health__token="s3cret-probe-token") as (
            runner, _fake):
        url = runner.health.url
        assert (await _get(url + "/healthz"))[0] == 200  # container probes need no token
        for path in ("/readyz", "/status", "/metrics"):
            status, body = await _get(url + path)
            assert status == 401 and "s3cret" not in body, path
        async with aiohttp.ClientSession() as http:
            wrong = {"Authorization": "Bearer not-the-token"}
            async with http.get(url + "/status", headers=wrong) as resp:
                assert resp.status == 401
            right = {"Authorization": "Bearer s3cret-probe-token"}
            for path in ("/readyz", "/status", "/metrics"):
                async with http.get(url + path, headers=right) as resp:
                    assert resp.status == 200, path
