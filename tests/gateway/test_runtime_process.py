"""`hermes gateway run` as a real process: SIGTERM drain, SIGUSR1 restart code, the
single-instance lock, and exit 78 for a configuration that cannot run."""

from __future__ import annotations

import asyncio
import signal
import socket

import aiohttp
import pytest
from openai import AsyncOpenAI

from storage import StateStore
from tests.fakes.openai_server import hang, text
from tests.gateway.runtime_proc import API_KEY, GatewayProcess, free_port, write_profile

REPLY = "The quick brown fox jumps over the lazy dog, slowly and completely."


@pytest.fixture
async def gw(tmp_path, model):
    procs: list[GatewayProcess] = []

    def make(*, drain_timeout_s: float = 5.0, api_port: int | None = None,
             health_port: int | None = None) -> GatewayProcess:
        api_port = api_port or free_port()
        health_port = health_port or free_port()
        write_profile(tmp_path, model.base_url, api_port=api_port, health_port=health_port,
                      drain_timeout_s=drain_timeout_s)
        p = GatewayProcess(tmp_path, api_port, health_port)
        procs.append(p)
        return p

    yield make
    for p in procs:
        await p.kill()


def _client(gp: GatewayProcess) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=gp.api_url, api_key=API_KEY, max_retries=0, timeout=30)


async def _stream(client: AsyncOpenAI, content: str, user: str) -> str:
    out = []
    stream = await client.chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": content}], stream=True,
        user=user)
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            out.append(chunk.choices[0].delta.content)
    return "".join(out)


async def _stored_user_texts(home) -> list[str]:
    store = await StateStore.open(home / "state.db")
    try:
        out = []
        for s in await store.list_sessions(limit=20):
            out += [m["content"] for m in await store.load_history(s.id) if m["role"] == "user"]
        return out
    finally:
        await store.close()


async def test_sigterm_lets_the_running_turn_finish_and_exits_0(gw, model, tmp_path):
    model.enqueue(text(REPLY, chunk_chars=4, delay_s=0.04))
    gp = await gw().start()
    await gp.wait_ready()
    client = _client(gp)
    reply = asyncio.create_task(_stream(client, "tell me about the fox", "alice"))
    async with asyncio.timeout(10):
        while not model.requests:
            await asyncio.sleep(0.01)
    gp.signal(signal.SIGTERM)
    assert await asyncio.wait_for(reply, 20) == REPLY
    assert await gp.wait_exit() == 0, gp.output()
    await client.close()
    assert await _stored_user_texts(tmp_path) == ["tell me about the fox"]


async def _mid_turn(gw, model, drain_timeout_s: float, question: str, user: str):
    """A gateway process whose model hangs, with one HTTP request waiting on it."""
    model.enqueue(hang(120))
    gp = await gw(drain_timeout_s=drain_timeout_s).start()
    await gp.wait_ready()
    client = _client(gp)
    reply = asyncio.create_task(_stream(client, question, user))
    async with asyncio.timeout(10):
        while not model.requests:
            await asyncio.sleep(0.01)
    return gp, client, reply


async def test_sigterm_with_hanging_model_interrupts_after_drain_and_exits_0(gw, model,
                                                                            tmp_path):
    gp, client, reply = await _mid_turn(gw, model, 0.5, "this will take forever", "bob")
    gp.signal(signal.SIGTERM)
    assert await gp.wait_exit(20) == 0, gp.output()
    # The client is answered (an error or a closed stream), never left hanging.
    done, _ = await asyncio.wait({reply}, timeout=10)
    assert done
    await client.close()
    assert await _stored_user_texts(tmp_path) == ["this will take forever"]


async def test_sigusr1_exits_75(gw):
    gp = await gw().start()
    await gp.wait_ready()
    gp.signal(signal.SIGUSR1)
    assert await gp.wait_exit() == 75, gp.output()


async def test_second_gateway_on_the_profile_is_refused_then_replace_takes_over(gw):
    first = await gw().start()
    await first.wait_ready()
    assert first.proc is not None
    second = await gw(api_port=first.api_port, health_port=first.health_port).start()
    code = await second.wait_exit()
    assert code != 0
    assert f"pid {first.proc.pid}" in second.output()
    assert "--replace" in second.output()
    assert first.proc.returncode is None

    third = await gw(api_port=first.api_port, health_port=first.health_port).start("--replace")
    assert await first.wait_exit() == 0  # drained on SIGTERM
    await third.wait_ready()
    third.signal(signal.SIGTERM)
    assert await third.wait_exit() == 0


async def test_health_port_in_use_exits_78(gw):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        gp = await gw(health_port=busy.getsockname()[1]).start()
        assert await gp.wait_exit() == 78, gp.output()
    assert "gateway.health" in gp.output()


async def test_only_adapter_port_in_use_exits_78(gw):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        gp = await gw(api_port=busy.getsockname()[1]).start()
        try:
            code = await gp.wait_exit(20)  # generous: a loaded CI host starts slowly
        except TimeoutError:
            code = None
    assert code == 78, gp.output()


async def test_a_second_ctrl_c_during_the_drain_exits_at_once(gw, model, tmp_path):
    gp, client, reply = await _mid_turn(gw, model, 60, "a very long job", "carol")
    gp.signal(signal.SIGINT)  # Ctrl-C drains: would wait up to 60 s for the hanging turn
    await asyncio.sleep(0.5)
    gp.signal(signal.SIGINT)  # Ctrl-C again: leave now
    assert await gp.wait_exit(10) == 1, gp.output()
    reply.cancel()
    await client.close()
    # What was stored stays stored for the next start.
    assert await _stored_user_texts(tmp_path) == ["a very long job"]


def test_a_stuck_shutdown_ends_the_process_with_stacks(tmp_path):
    import subprocess
    import sys

    code = ("import time\nfrom gateway.process import shutdown_deadline\n"
            "shutdown_deadline({s})\n{after}")
    stuck = subprocess.run([sys.executable, "-c", code.format(s=0.2, after="time.sleep(30)")],
                           capture_output=True, text=True, timeout=20)
    assert stuck.returncode == 1
    assert "Thread" in stuck.stderr and "shutdown_stuck" in stuck.stderr + stuck.stdout
    fine = subprocess.run([sys.executable, "-c", code.format(
        s=0.5, after="") + "\nimport sys; sys.exit(0)"], capture_output=True, text=True,
        timeout=20)
    assert fine.returncode == 0


async def _event_loop_of(gp: GatewayProcess) -> str:
    await gp.wait_ready()
    async with aiohttp.ClientSession() as http, http.get(gp.health_url + "/status") as resp:
        body = await resp.json()
    gp.signal(signal.SIGTERM)
    assert await gp.wait_exit() == 0, gp.output()
    return str(body["gateway"]["event_loop"])


async def test_the_daemon_runs_on_uvloop_unless_told_otherwise(gw, monkeypatch):
    monkeypatch.delenv("HERMES_EVENT_LOOP", raising=False)
    assert await _event_loop_of(await gw().start()) == "uvloop"
    monkeypatch.setenv("HERMES_EVENT_LOOP", "asyncio")
    assert await _event_loop_of(await gw().start()) == "asyncio"

