"""`execute_code` end to end, with the fake model driving the calls: through the API adapter
(the OpenAI SDK as the client) and through a chat (FakeAdapter). The script runs in the
asking user's workspace, calls read_file through its tool channel, and only what it prints
reaches the model; a script that misbehaves costs one tool result, not the gateway."""

from __future__ import annotations

from pathlib import Path

from openai import AsyncOpenAI

from adapters.api.adapter import ApiAdapter
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.gateway.runtime_harness import runner_for
from tests.multiuser.support import tool_results

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
