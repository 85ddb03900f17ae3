"""MCP tools end to end: the real runner with the `api` adapter (over HTTP, with the openai
SDK as the client) or Telegram (the fake Bot API), the fake model driving the tool calls,
and the SDK's test server over stdio. Asserts what the model was sent and what the user got."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI

from adapters.api.adapter import ApiAdapter
from gateway.runner import GatewayRunner
from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest, call, text, tool_calls
from tests.gateway.runtime_harness import runner_for
from tests.mcp.support import stdio_block, until
from tests.multiuser.support import tool_results
from tests.multiuser.telegram_harness import ADA, group_gateway

KEY = "sk-mcp-test-0123456789abcdef"


@dataclass
class Api:
    runner: GatewayRunner
    client: AsyncOpenAI

    async def ask(self, words: str, *, session: str = "s1") -> str:
        resp = await self.client.chat.completions.create(
            model="hermes-agent", messages=[{"role": "user", "content": words}], user=session)
        return resp.choices[0].message.content or ""

    def mcp_tools(self) -> set[str]:
        hub = self.runner.mcp
        assert hub is not None
        return {t.name for t in hub.tools()}


@pytest.fixture
async def api(tmp_path: Path, model: FakeOpenAIServer) -> AsyncIterator[Api]:
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY]})
    async with runner_for(tmp_path, model, adapters={"api": adapter},
                          compression__enabled=False,
                          mcp_servers__notes=stdio_block(timeout_s=5)) as (runner, _):
        client = AsyncOpenAI(base_url=f"http://127.0.0.1:{adapter.port}/v1", api_key=KEY,
                             max_retries=0, timeout=30)
        yield Api(runner, client)
        await client.close()


def offered(request: RecordedRequest) -> list[str]:
    return [t["function"]["name"] for t in request.body.get("tools") or []]


async def test_the_model_calls_an_mcp_tool_and_the_user_gets_the_answer(
    api: Api, model: FakeOpenAIServer,
) -> None:
    model.enqueue(tool_calls(call("mcp__notes__echo", {"text": "bonjour"})),
                  text("The notes server said bonjour."))
    assert await api.ask("ask the notes server to echo bonjour") == \
        "The notes server said bonjour."
    first, second = model.requests[-2:]
    assert "mcp__notes__echo" in offered(first)
    schema = next(t for t in first.body["tools"]
                  if t["function"]["name"] == "mcp__notes__echo")["function"]["parameters"]
    assert schema["required"] == ["text"]
    assert tool_results(second) == ["echo: bonjour"]


async def test_tools_that_appear_mid_session_wait_for_the_next_session_byte_for_byte(
    api: Api, model: FakeOpenAIServer,
) -> None:
    model.enqueue(tool_calls(call("mcp__notes__grow", {})), text("Grown."))
    assert await api.ask("grow") == "Grown."
    before = model.requests[-2]
    await until(lambda: "mcp__notes__extra" in api.mcp_tools(), "the refreshed tool list")
    # Same session: the model asks for the new tool anyway; it is not this session's.
    model.enqueue(tool_calls(call("mcp__notes__extra", {"x": 2})), text("Could not."))
    assert await api.ask("use extra") == "Could not."
    during, after_call = model.requests[-2:]
    assert b"mcp__notes__extra" not in during.raw
    assert json.dumps(during.body["tools"]) == json.dumps(before.body["tools"])
    assert during.body["messages"][0] == before.body["messages"][0]
    assert _segment(during.raw, b'"tools":') == _segment(before.raw, b'"tools":')
    assert _segment(during.raw, b'{"role":"system"') == _segment(before.raw,
                                                                  b'{"role":"system"')
    assert "Unknown tool 'mcp__notes__extra'" in tool_results(after_call)[-1]
    # A new session is offered it, and it works.
    model.enqueue(tool_calls(call("mcp__notes__extra", {"x": 21})), text("42 it is."))
    assert await api.ask("use extra", session="s2") == "42 it is."
    fresh, result = model.requests[-2:]
    assert "mcp__notes__extra" in offered(fresh)
    assert tool_results(result)[-1] == "42"


def _segment(raw: bytes, start: bytes) -> bytes:
    """The JSON value starting at `start` in a request body, as sent (brackets balanced)."""
    i = raw.index(start)
    depth, k, in_str, esc = 0, i, False, False
    while k < len(raw):
        ch = raw[k:k + 1]
        if in_str:
            if esc:
                esc = False
            elif ch == b"\\":
                esc = True
            elif ch == b'"':
                in_str = False
        elif ch == b'"':
            in_str = True
        elif ch in b"[{":
            depth += 1
        elif ch in b"]}":
            depth -= 1
            if depth == 0:
                return raw[i:k + 1]
        k += 1
    return raw[i:]


async def test_a_server_crash_mid_turn_costs_one_tool_result_and_the_next_turn_works(
    api: Api, model: FakeOpenAIServer,
) -> None:
    model.enqueue(tool_calls(call("mcp__notes__die", {})), text("The server crashed."))
    assert await api.ask("crash it") == "The server crashed."
    result = tool_results(model.requests[-1])[-1]
    assert "closed the connection during die" in result
    hub = api.runner.mcp
    assert hub is not None
    conn = hub.connections["notes"]
    await until(lambda: conn.connects == 2 and conn.state == "connected", "the reconnect")
    model.enqueue(tool_calls(call("mcp__notes__echo", {"text": "again"})), text("Back."))
    assert await api.ask("echo again") == "Back."
    assert tool_results(model.requests[-1])[-1] == "echo: again"


async def test_the_platform_toolsets_decide_what_is_offered(
    tmp_path: Path, model: FakeOpenAIServer,
) -> None:
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY]})
    async with runner_for(tmp_path, model, adapters={"api": adapter},
                          compression__enabled=False, tools__toolsets=["files"],
                          mcp_servers__notes=stdio_block()) as (runner, _):
        client = AsyncOpenAI(base_url=f"http://127.0.0.1:{adapter.port}/v1", api_key=KEY,
                             max_retries=0, timeout=30)
        model.enqueue(text("ok"))
        await Api(runner, client).ask("hi")
        await client.close()
    names = offered(model.requests[-1])
    assert names == ["read_file", "write_file", "patch", "search_files"]


async def test_telegram_user_gets_an_mcp_answer_and_tools_lists_what_is_on_and_off(
    tmp_path: Path, model: FakeOpenAIServer,
) -> None:
    overrides: dict[str, Any] = {
        "mcp_servers__notes": stdio_block(),
        "mcp_servers__broken": {"command": str(tmp_path / "missing-server")},
        "tools__toolsets": ["files", "memory", "mcp"],
    }
    async with group_gateway(tmp_path, model, **overrides) as g:
        model.enqueue(tool_calls(call("mcp__notes__echo", {"text": "from telegram"})),
                      text("Echoed."))
        await g.turn(g.ada_dm, ADA, "echo something", "Echoed.")
        assert tool_results(model.requests[-1]) == ["echo: from telegram"]
        listing = await g.command(g.ada_dm, ADA, "/tools")
    assert "This session's tools" in listing
    assert "mcp:notes: mcp__notes__echo" in listing
    assert "files: read_file, write_file, patch, search_files" in listing
    assert "todo: todo — toolset todo is off" in listing
    assert "mcp:broken — server down: command not found" in listing


async def test_status_reports_each_mcp_server(api: Api) -> None:
    import aiohttp

    assert api.runner.health is not None
    async with aiohttp.ClientSession() as http, \
            http.get(api.runner.health.url + "/status") as resp:
        body = await resp.json()
    assert body["mcp"]["notes"]["state"] == "connected"
    assert body["mcp"]["notes"]["tools"] >= 10
