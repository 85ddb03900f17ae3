"""The MCP client against a real local server (the SDK's, in tests/mcp/server.py): tools,
timeouts, crashes, restarts, list changes, output caps, environment, HTTP."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_core.tools.base import ToolCall, ToolContext, ToolOutcome
from agent_core.tools.registry import ToolRegistry
from agent_core.tools.toolsets import select
from gateway.config.mcp import McpServerConfig
from gateway.mcp import McpHub
from gateway.mcp.results import MAX_RESULT_CHARS
from hermes_common.backoff import Backoff
from tests.mcp.support import end, free_port, http_server, start_http, stdio_config, until

FAST = Backoff(base_s=0.05, cap_s=0.2, jitter=0.0)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=tmp_path, output_dir=tmp_path / "out", session_id="s1")


async def hub_of(servers: dict[str, McpServerConfig], tmp_path: Path,
                 **kw: Any) -> McpHub:
    kw.setdefault("backoff", FAST)
    hub = McpHub(servers, home=tmp_path / "mcp", logs_dir=tmp_path / "logs", **kw)
    await hub.start()
    return hub


@pytest.fixture(params=["auto", "legacy"])
async def notes(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[McpHub]:
    """The test server over stdio, spoken to in the 2026 protocol ("auto") and in the
    handshake era ("legacy", what most servers in the wild speak)."""
    hub = await hub_of({"notes": stdio_config(timeout_s=5)}, tmp_path, mode=request.param)
    yield hub
    await hub.stop()


async def run(hub: McpHub, ctx: ToolContext, *calls: tuple[str, dict[str, Any]]
              ) -> list[ToolOutcome]:
    import json

    chosen = select(ToolRegistry(), None, [hub])
    return await chosen.execute(
        [ToolCall(f"c{i}", name, json.dumps(args)) for i, (name, args) in enumerate(calls)], ctx)


async def test_tools_are_namespaced_in_the_server_toolset_with_the_servers_schema(
    notes: McpHub,
) -> None:
    tools = {t.name: t for t in notes.tools()}
    assert "mcp__notes__echo" in tools and "mcp__notes__hang" in tools
    echo = tools["mcp__notes__echo"]
    assert echo.toolset == "mcp:notes"
    params = echo.schema()["function"]["parameters"]
    assert params["properties"]["text"]["type"] == "string"
    assert params["required"] == ["text"]
    assert echo.parallel_safe and not tools["mcp__notes__note"].parallel_safe


async def test_a_call_returns_the_servers_text(notes: McpHub, ctx: ToolContext) -> None:
    [out] = await run(notes, ctx, ("mcp__notes__echo", {"text": "héllo"}))
    assert out.ok and out.content == "echo: héllo"


async def test_include_and_exclude_filter_the_servers_tools(tmp_path: Path) -> None:
    hub = await hub_of({"a": stdio_config(include=["echo", "pid", "big"], exclude=["big"])},
                       tmp_path)
    try:
        assert sorted(t.name for t in hub.tools()) == ["mcp__a__echo", "mcp__a__pid"]
    finally:
        await hub.stop()


async def test_a_server_crashing_mid_call_costs_that_call_then_it_is_reconnected(
    notes: McpHub, ctx: ToolContext,
) -> None:
    [first] = await run(notes, ctx, ("mcp__notes__pid", {}))
    began = time.monotonic()
    [out] = await run(notes, ctx, ("mcp__notes__die", {}))
    assert time.monotonic() - began < 8
    assert not out.ok
    assert "closed the connection during die" in out.content
    conn = notes.connections["notes"]
    await until(lambda: conn.connects == 2 and conn.state == "connected", "a reconnect")
    [again] = await run(notes, ctx, ("mcp__notes__pid", {}))
    assert again.ok and again.content != first.content  # a new process


async def test_a_hanging_call_ends_at_its_timeout_and_the_server_stays_usable(
    tmp_path: Path, ctx: ToolContext,
) -> None:
    hub = await hub_of({"slow": stdio_config(timeout_s=0.5)}, tmp_path)
    try:
        began = time.monotonic()
        [out] = await run(hub, ctx, ("mcp__slow__hang", {}))
        took = time.monotonic() - began
        assert not out.ok and "did not answer hang within 0.5s" in out.content
        assert took < 4, took
        [ok] = await run(hub, ctx, ("mcp__slow__echo", {"text": "still here"}))
        assert ok.ok and ok.content == "echo: still here"
        assert hub.connections["slow"].connects == 1
    finally:
        await hub.stop()


async def test_oversized_output_is_cut_for_the_model_and_kept_on_disk(
    tmp_path: Path, ctx: ToolContext,
) -> None:
    hub = await hub_of({"b": stdio_config(max_output_chars=5000)}, tmp_path)
    try:
        [out] = await run(hub, ctx, ("mcp__b__big", {"chars": 300_000}))
        assert out.ok
        assert len(out.content) <= 5000
        assert "output truncated" in out.content
        assert out.full_output_path is not None
        assert len(out.full_output_path.read_text()) == 300_000
        [huge] = await run(hub, ctx, ("mcp__b__big", {"chars": MAX_RESULT_CHARS + 50_000}))
        assert huge.full_output_path is not None
        kept = huge.full_output_path.read_text()
        assert len(kept) < MAX_RESULT_CHARS + 200
        assert kept.endswith("the rest was dropped ...]")
    finally:
        await hub.stop()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_server_killed_while_idle_is_noticed_and_reconnected(
    tmp_path: Path, ctx: ToolContext, mode: str,
) -> None:
    hub = await hub_of({"k": stdio_config()}, tmp_path, keepalive_s=0.2, mode=mode)
    try:
        conn = hub.connections["k"]
        await asyncio.sleep(1.0)  # several keepalives pass without a false alarm
        assert conn.connects == 1
        [pid] = await run(hub, ctx, ("mcp__k__pid", {}))
        os.kill(int(pid.content), signal.SIGKILL)
        await until(lambda: conn.connects == 2 and conn.state == "connected", "a reconnect")
        [again] = await run(hub, ctx, ("mcp__k__echo", {"text": "back"}))
        assert again.ok and again.content == "echo: back"
    finally:
        await hub.stop()


async def test_the_tool_list_is_refreshed_when_the_server_says_it_changed(
    notes: McpHub, ctx: ToolContext,
) -> None:
    assert "mcp__notes__extra" not in {t.name for t in notes.tools()}
    [out] = await run(notes, ctx, ("mcp__notes__grow", {}))
    assert out.ok
    await until(lambda: "mcp__notes__extra" in {t.name for t in notes.tools()},
                "the new tool")
    [doubled] = await run(notes, ctx, ("mcp__notes__extra", {"x": 21}))
    assert doubled.content == "42"


async def test_the_server_gets_no_secret_of_ours_unless_configured(
    tmp_path: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:leaky-token")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leaky")
    hub = await hub_of({"e": stdio_config(env={"NOTES_TOKEN": "given-on-purpose"})}, tmp_path)
    try:
        got = await run(hub, ctx, ("mcp__e__env", {"name": "TELEGRAM_BOT_TOKEN"}),
                        ("mcp__e__env", {"name": "OPENAI_API_KEY"}),
                        ("mcp__e__env", {"name": "NOTES_TOKEN"}),
                        ("mcp__e__env", {"name": "PATH"}))
        assert [o.content for o in got[:3]] == ["", "", "given-on-purpose"]
        assert got[3].content
        [where] = await run(hub, ctx, ("mcp__e__where", {}))
        assert where.content == str(tmp_path / "mcp" / "e")
    finally:
        await hub.stop()


async def test_a_server_that_cannot_start_blocks_nothing_and_says_why(
    tmp_path: Path, ctx: ToolContext,
) -> None:
    broken = McpServerConfig(command=str(tmp_path / "no-such-server"))
    began = time.monotonic()
    hub = await hub_of({"gone": broken, "ok": stdio_config()}, tmp_path)
    try:
        assert time.monotonic() - began < 8
        assert {t.toolset for t in hub.tools()} == {"mcp:ok"}
        down = hub.toolsets_down()
        assert "mcp:gone" in down and "command not found" in down["mcp:gone"]
        chosen = select(ToolRegistry(), ["mcp"], [hub])
        assert any(o.toolset == "mcp:gone" and "command not found" in o.reason
                   for o in chosen.off)
    finally:
        await hub.stop()


async def test_read_only_tools_run_in_parallel_and_writers_one_at_a_time(
    notes: McpHub, ctx: ToolContext,
) -> None:
    def span(o: ToolOutcome) -> tuple[float, float]:
        a, b = o.content.split()
        return float(a), float(b)

    reads = await run(notes, ctx, ("mcp__notes__nap", {"seconds": 0.6}),
                      ("mcp__notes__nap", {"seconds": 0.6}))
    (a0, a1), (b0, b1) = span(reads[0]), span(reads[1])
    assert a0 < b1 and b0 < a1, "read-only calls overlap"
    writes = await run(notes, ctx, ("mcp__notes__note", {"text": "x", "seconds": 0.2}),
                       ("mcp__notes__note", {"text": "y", "seconds": 0.2}))
    first_end, second_start = span(writes[0])[1], span(writes[1])[0]
    assert first_end <= second_start, "writers never overlap"


async def test_streamable_http_server_with_headers(tmp_path: Path, ctx: ToolContext) -> None:
    async with http_server() as url:
        cfg = McpServerConfig(url=url, headers={"X-Team": "blue"})
        hub = await hub_of({"web": cfg}, tmp_path)
        try:
            got = await run(hub, ctx, ("mcp__web__echo", {"text": "over http"}),
                            ("mcp__web__header", {"name": "x-team"}))
            assert [o.content for o in got] == ["echo: over http", "blue"]
        finally:
            await hub.stop()


async def test_stopping_ends_the_server_process(notes: McpHub, ctx: ToolContext) -> None:
    [pid] = await run(notes, ctx, ("mcp__notes__pid", {}))
    await notes.stop()

    def gone() -> bool:
        try:
            os.kill(int(pid.content), 0)
        except ProcessLookupError:
            return True
        return False

    await until(gone, "the server process to end", timeout_s=10)
    assert notes.tools() == []


async def test_a_call_while_the_server_is_down_fails_at_once(
    tmp_path: Path, ctx: ToolContext,
) -> None:
    slow = Backoff(base_s=30, cap_s=30, jitter=0.0)
    hub = await hub_of({"d": stdio_config()}, tmp_path, backoff=slow)
    try:
        await run(hub, ctx, ("mcp__d__die", {}))
        conn = hub.connections["d"]
        await until(lambda: conn.state == "down", "the server marked down")
        began = time.monotonic()
        chosen = select(ToolRegistry(), None, [hub])
        assert chosen.names() == []  # a new session is not offered its tools
        assert "server down" in hub.toolsets_down()["mcp:d"]
        # A session that still offers the tool gets an error result at once.
        [out] = await run_with(hub.connections["d"], ctx)
        assert time.monotonic() - began < 3
        assert not out.ok and "is not connected" in out.content
    finally:
        await hub.stop()


async def run_with(conn: Any, ctx: ToolContext) -> list[ToolOutcome]:
    import mcp_types as mt

    from gateway.mcp.hub import mcp_tool

    spec = mt.Tool(name="echo", input_schema={"type": "object"})
    registry = ToolRegistry([mcp_tool(conn, spec)])
    return await registry.execute([ToolCall("c1", "mcp__d__echo", '{"text": "x"}')], ctx)


async def test_an_interrupted_call_is_abandoned_and_the_connection_stays_usable(
    notes: McpHub, ctx: ToolContext,
) -> None:
    task = asyncio.create_task(run(notes, ctx, ("mcp__notes__hang", {})))
    await asyncio.sleep(0.5)
    ctx.interrupt.set("stopped by user")
    [out] = await asyncio.wait_for(task, 5)
    assert not out.ok and "interrupted" in out.content
    fresh = ToolContext(workspace=ctx.workspace, output_dir=ctx.output_dir)
    [ok] = await run(notes, fresh, ("mcp__notes__echo", {"text": "after stop"}))
    assert ok.ok and ok.content == "echo: after stop"
    assert notes.connections["notes"].connects == 1


async def test_a_tool_description_that_reads_like_an_injection_is_withheld(
    notes: McpHub, ctx: ToolContext,
) -> None:
    tools = {t.name: t for t in notes.tools()}
    lookup = tools["mcp__notes__lookup"].description
    assert "attacker" not in lookup and "withheld" in lookup
    assert tools["mcp__notes__echo"].description == "[MCP server notes] Say `text` back."
    [out] = await run(notes, ctx, ("mcp__notes__lookup", {"word": "tide"}))
    assert out.ok and out.content == "tide: a word"


async def test_a_server_that_never_answers_the_handshake_does_not_hold_up_start(
    tmp_path: Path,
) -> None:
    mute = McpServerConfig(command="sleep", args=["60"], connect_timeout_s=1)
    began = time.monotonic()
    hub = await hub_of({"mute": mute}, tmp_path, startup_wait_s=3)
    try:
        assert time.monotonic() - began < 6
        await until(lambda: hub.connections["mute"].state == "down", "the attempt to fail")
        assert hub.toolsets_down()["mcp:mute"] == "server down: timed out"
        assert hub.tools() == []
    finally:
        began = time.monotonic()
        await hub.stop()
        assert time.monotonic() - began < 8


async def test_a_server_that_failed_reads_down_while_it_retries(tmp_path: Path) -> None:
    # Each attempt hangs 1 s in the handshake; the retry starts 0.1 s after a failure.
    mute = McpServerConfig(command="sleep", args=["60"], connect_timeout_s=1)
    quick = Backoff(base_s=0.1, cap_s=0.1, jitter=0.0)
    hub = await hub_of({"mute": mute}, tmp_path, startup_wait_s=3, backoff=quick)
    try:
        conn = hub.connections["mute"]
        await until(lambda: conn.state == "down", "the first attempt to fail")
        await asyncio.sleep(0.5)  # inside the second attempt's handshake
        assert conn.state == "down"
        assert hub.toolsets_down()["mcp:mute"] == "server down: timed out"
    finally:
        await hub.stop()


async def test_a_stdio_servers_stderr_goes_to_its_log_file(notes: McpHub, tmp_path: Path,
                                                            ctx: ToolContext) -> None:
    await run(notes, ctx, ("mcp__notes__echo", {"text": "x"}))
    await notes.stop()
    assert (tmp_path / "logs" / "mcp-notes.log").exists()


async def test_a_message_over_the_size_limit_resets_the_connection_not_the_gateway(
    tmp_path: Path, ctx: ToolContext,
) -> None:
    hub = await hub_of({"f": stdio_config()}, tmp_path, max_message_bytes=256 * 1024)
    try:
        [out] = await run(hub, ctx, ("mcp__f__big", {"chars": 600_000}))
        assert not out.ok
        assert "sent a message over 262,144 bytes during big; the connection was reset" \
            in out.content
        conn = hub.connections["f"]
        await until(lambda: conn.connects == 2 and conn.state == "connected", "a reconnect")
        [ok] = await run(hub, ctx, ("mcp__f__big", {"chars": 100_000}))
        assert ok.ok and ok.full_output_path is not None
    finally:
        await hub.stop()


async def test_an_http_server_that_restarts_is_reconnected(tmp_path: Path, ctx: ToolContext
                                                          ) -> None:
    port = free_port()
    proc = await start_http(port)
    cfg = McpServerConfig(url=f"http://127.0.0.1:{port}/mcp", connect_timeout_s=2)
    hub = await hub_of({"h": cfg}, tmp_path, keepalive_s=0.2)
    try:
        [first] = await run(hub, ctx, ("mcp__h__pid", {}))
        end(proc)
        conn = hub.connections["h"]
        await until(lambda: conn.state != "connected", "the loss to be noticed")
        assert hub.tools() == [] and "mcp:h" in hub.toolsets_down()
        proc = await start_http(port)
        await until(lambda: conn.state == "connected" and conn.connects == 2, "a reconnect")
        [again] = await run(hub, ctx, ("mcp__h__pid", {}))
        assert again.ok and again.content != first.content
    finally:
        await hub.stop()
        end(proc)
