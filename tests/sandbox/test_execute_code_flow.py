"""`execute_code` end to end, with the fake model driving the calls: through the API adapter
(the OpenAI SDK as the client), Telegram (the fake Bot API) and a chat (FakeAdapter). The
script runs in the asking user's workspace, calls read_file through its tool channel, and
only what it prints reaches the model; it calls only tools the chat is offered; a script that
misbehaves costs one tool result, not the gateway."""

from __future__ import annotations

from pathlib import Path

from openai import AsyncOpenAI

from adapters.api.adapter import ApiAdapter
from agent_core.sandbox import Isolation
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.gateway.runtime_harness import runner_for
from tests.multiuser.support import tool_results
from tests.multiuser.telegram_harness import ADA, group_gateway

KEY = "sk-alice-0123456789abcdef"
READ = ("from hermes_tools import read_file\n"
        "lines = read_file('report.txt')\n"
        "print('WORDS', sum(len(l.split('|', 1)[1].split()) for l in lines.splitlines()[1:]))\n")


async def test_a_script_runs_for_the_api_user_in_their_workspace(tmp_path: Path,
                                                                 model: FakeOpenAIServer) -> None:
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY]})
    model.enqueue(
        tool_calls(call("write_file", {"path": "report.txt", "content": "one two\nthree\n"})),
        tool_calls(call("execute_code", {"code": READ})),
        text("There are 3 words."))
    async with runner_for(tmp_path, model, adapters={"api": adapter},
                          compression__enabled=False) as (runner, _):
        client = AsyncOpenAI(base_url=f"http://127.0.0.1:{adapter.port}/v1", api_key=KEY,
                             max_retries=0, timeout=30)
        try:
            resp = await client.chat.completions.create(
                model="hermes-agent", messages=[{"role": "user", "content": "count words"}])
        finally:
            await client.close()
    assert resp.choices[0].message.content == "There are 3 words."
    result = tool_results(model.requests[2])[-1]
    assert "[execute_code: success, exit code 0" in result
    assert "1 tool call(s)" in result
    assert "WORDS 3" in result
    assert "execute_code" in [t["function"]["name"] for t in model.requests[0].body["tools"]]


async def test_a_script_cannot_reach_tools_the_chat_has_off(tmp_path: Path,
                                                             model: FakeOpenAIServer) -> None:
    """Only the `code` toolset is on: read_file and write_file are among the script's tools
    (`tools.code.tools`) but not offered here, so the script is refused both and the
    workspace is neither read nor written."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("the secret\n")
    script = ("from hermes_tools import read_file, write_file, ToolCallError\n"
              "try:\n    print('READ', read_file('a.txt'))\n"
              "except ToolCallError as exc:\n    print('NO READ:', exc)\n"
              "try:\n    print('WROTE', write_file('b.txt', 'x'))\n"
              "except ToolCallError as exc:\n    print('NO WRITE:', exc)\n")
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY]})
    model.enqueue(tool_calls(call("execute_code", {"code": script})), text("Refused."))
    async with runner_for(tmp_path, model, adapters={"api": adapter},
                          compression__enabled=False, tools__toolsets=["code"],
                          tools__code__tools=["read_file", "write_file"],
                          agent__workspace=str(workspace), workspace__shared=True):
        client = AsyncOpenAI(base_url=f"http://127.0.0.1:{adapter.port}/v1", api_key=KEY,
                             max_retries=0, timeout=30)
        try:
            resp = await client.chat.completions.create(
                model="hermes-agent", messages=[{"role": "user", "content": "read a.txt"}])
        finally:
            await client.close()
    assert resp.choices[0].message.content == "Refused."
    assert [t["function"]["name"] for t in model.requests[0].body["tools"]] == ["execute_code"]
    result = tool_results(model.requests[1])[-1]
    assert "[execute_code: success, exit code 0" in result
    assert "NO READ: tool 'read_file' may not be called from this script" in result
    assert "NO WRITE: tool 'write_file' may not be called from this script" in result
    assert "the secret" not in result
    assert "0 tool call(s)" in result
    assert not (workspace / "b.txt").exists()


async def test_a_telegram_user_gets_a_scripts_answer_and_tools_says_how_it_is_confined(
        tmp_path: Path, model: FakeOpenAIServer, isolation: Isolation) -> None:
    """Ada asks in a Telegram DM; the fake model runs a script that reads her file; the
    model gets only the script's printed output; /tools names the sandbox's isolation."""
    script = ("from hermes_tools import read_file\n"
              "rows = read_file('scores.txt').splitlines()[1:]\n"
              "print('TOTAL', sum(int(r.split('|', 1)[1]) for r in rows))\n")
    async with group_gateway(tmp_path, model) as g:
        model.enqueue(
            tool_calls(call("write_file", {"path": "scores.txt", "content": "3\n4\n5\n"})),
            tool_calls(call("execute_code", {"code": script})),
            text("The total is 12."))
        await g.turn(g.ada_dm, ADA, "add up my scores", "The total is 12.")
        result = tool_results(model.requests[2])[-1]
        listing = await g.command(g.ada_dm, ADA, "/tools")
    assert result.startswith("[execute_code: success, exit code 0")
    assert "1 tool call(s)" in result
    assert result.splitlines()[-1] == "TOTAL 12"
    assert "rows" not in result and "read_file" not in result  # the script's text stays out
    assert "How the tools that act are confined:" in listing
    assert f"• execute_code: on — {isolation.describe()}" in listing.splitlines()
    assert "• terminal: off (tools.terminal.enabled: false)" in listing.splitlines()


async def test_a_misbehaving_script_costs_one_tool_result_in_a_chat(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    model.enqueue(
        tool_calls(call("execute_code", {"code": "while True:\n    pass\n"})),
        text("That script ran too long."),
        text("Still here."))
    async with runner_for(tmp_path, model, compression__enabled=False,
                          tools__code__timeout_s=1) as (runner, fake):
        await fake.inject("loop forever", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=20)
        await fake.inject("are you alive?", chat_id="c1", user_id="u1")
        await fake.wait_turns(2, timeout_s=20)
        assert fake.messages("c1")[-2:] == ["That script ran too long.", "Still here."]
        result = tool_results(model.requests[1])[-1]
        assert "[execute_code: timeout" in result
        assert "ran past 1s and was killed" in result
        assert runner.parts is not None
        assert any("execute_code: on — " in line for line in runner.parts.agents.acting.describe())


async def test_steps_of_only_execute_code_do_not_spend_the_iteration_budget(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    for i in range(3):
        model.enqueue(tool_calls(call("execute_code", {"code": f"print({i} * 7)"})))
    model.enqueue(text("Three scripts ran."))
    async with runner_for(tmp_path, model, compression__enabled=False,
                          model__max_iterations=2) as (_, fake):
        await fake.inject("run three scripts", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=20)
        assert "Three scripts ran." in fake.messages("c1")
    assert len(model.requests) == 4
    assert "14" in tool_results(model.requests[3])[-1]
