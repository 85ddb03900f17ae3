"""The turn loop against the fake OpenAI server, through the real SDK."""

from __future__ import annotations

from agent_core.agent import SUMMARY_REQUEST
from agent_core.events import Final, ReasoningDelta, Status, TextDelta, ToolFinished, Usage
from agent_core.messages import validate
from tests.agent.doubles import collect, echo_tool, make_agent, settings, terminal
from tests.fakes.openai_server import FakeOpenAIServer, Reply, call, text, tool_calls


async def test_streamed_deltas_arrive_in_order_and_final_is_their_join(fake_openai: FakeOpenAIServer):
    reply = "The quick brown fox jumps over the lazy dog, twice."
    fake_openai.enqueue(text(reply, chunk_chars=4))
    agent, _ = make_agent([settings(fake_openai)])
    events = await collect(agent.run_turn([], "say it"))
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    final = terminal(events)
    assert isinstance(final, Final)
    assert len(deltas) == len(reply) // 4 + 1
    assert "".join(deltas) == final.text == reply
    assert final.messages == [{"role": "assistant", "content": reply, "finish_reason": "stop"}]
    body = fake_openai.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_usage_and_reasoning_are_reported(fake_openai: FakeOpenAIServer):
    fake_openai.cached_tokens = 3
    fake_openai.enqueue(Reply(text="42", reasoning="thinking hard about it",
                              usage={"prompt_tokens": 100, "completion_tokens": 20,
                                     "total_tokens": 120,
                                     "prompt_tokens_details": {"cached_tokens": 64},
                                     "completion_tokens_details": {"reasoning_tokens": 7}}))
    agent, _ = make_agent([settings(fake_openai)])
    events = await collect(agent.run_turn([], "q"))
    usage = [e for e in events if isinstance(e, Usage)]
    assert usage == [Usage(100, 20, 64, 7, 120, "main", "fake-model")]
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "thinking hard about it"
    final = terminal(events)
    assert final.messages[-1]["reasoning"] == "thinking hard about it"


async def test_several_tool_calls_in_one_turn_results_in_call_order(fake_openai: FakeOpenAIServer):
    calls = [call("echo", {"n": i}, id=f"call_{i}") for i in range(4)]
    fake_openai.enqueue(tool_calls(*calls, content="let me check"), text("done"))
    agent, registry = make_agent([settings(fake_openai)])
    events = await collect(agent.run_turn([], "go"))
    final = terminal(events)
    assert isinstance(final, Final) and final.text == "done"
    assert registry.executed == [f"call_{i}" for i in range(4)]
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [e.preview for e in finished] == [f'result:{{"n": {i}}}' for i in range(4)]
    second = fake_openai.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool", "tool", "tool"]
    assert [m["tool_call_id"] for m in second[3:]] == [f"call_{i}" for i in range(4)]
    assert second[3]["content"] == 'result:{"n": 0}'
    assert second[2]["content"] == "let me check"
    assert validate(second) == []


async def test_budget_exhaustion_asks_for_a_summary_without_tools(fake_openai: FakeOpenAIServer):
    for i in range(3):
        fake_openai.enqueue(tool_calls(call("echo", {"i": i})))
    fake_openai.enqueue(text("Summary: I echoed three times."))
    agent, _ = make_agent([settings(fake_openai)], max_iterations=3)
    events = await collect(agent.run_turn([], "loop forever"))
    final = terminal(events)
    assert isinstance(final, Final) and final.budget_exhausted
    assert final.text == "Summary: I echoed three times."
    assert any(isinstance(e, Status) and e.kind == "budget_exhausted" for e in events)
    assert len(fake_openai.requests) == 4
    assert all("tools" in r.body for r in fake_openai.requests[:3])
    last = fake_openai.requests[3].body
    assert "tools" not in last
    assert last["messages"][-1] == {"role": "user", "content": SUMMARY_REQUEST}
    # the summary request itself is not part of the stored turn
    assert all(m.get("content") != SUMMARY_REQUEST for m in final.messages)
    assert final.messages[-1]["content"] == "Summary: I echoed three times."


async def test_execute_code_only_batches_are_refunded(fake_openai: FakeOpenAIServer):
    for _ in range(4):
        fake_openai.enqueue(tool_calls(call("execute_code", {"code": "print(1)"})))
    fake_openai.enqueue(text("scripts done"))
    agent, _ = make_agent([settings(fake_openai)], tools={"execute_code": echo_tool},
                          max_iterations=2)
    final = terminal(await collect(agent.run_turn([], "run scripts")))
    assert isinstance(final, Final) and not final.budget_exhausted
    assert final.text == "scripts done"
    assert len(fake_openai.requests) == 5


async def test_mixed_batches_with_execute_code_are_not_refunded(fake_openai: FakeOpenAIServer):
    for _ in range(2):
        fake_openai.enqueue(tool_calls(call("execute_code", {}), call("echo", {})))
    fake_openai.enqueue(text("summary"))
    agent, _ = make_agent([settings(fake_openai)],
                          tools={"execute_code": echo_tool, "echo": echo_tool}, max_iterations=2)
    final = terminal(await collect(agent.run_turn([], "mixed")))
    assert isinstance(final, Final) and final.budget_exhausted
    assert len(fake_openai.requests) == 3 and "tools" not in fake_openai.requests[2].body


async def test_system_prompt_is_byte_identical_across_turns(fake_openai: FakeOpenAIServer):
    prompt = "You are Hermes. 日本語もOK. Tools: memory, todo.\n\n## Memory\n- likes tea"
    agent, _ = make_agent([settings(fake_openai)], system_prompt=prompt,
                          ephemeral_system_prompt="Reply briefly.")
    history: list[dict] = []
    for i in range(5):
        fake_openai.enqueue(tool_calls(call("echo", {"turn": i})), text(f"answer {i}"))
        user = {"role": "user", "content": f"question {i}"}
        final = terminal(await collect(agent.run_turn(history, user)))
        history += [user, *final.messages]
    firsts = [r.body["messages"][0] for r in fake_openai.requests]
    assert len(firsts) == 10
    assert all(f == firsts[0] for f in firsts)
    assert firsts[0]["content"] == prompt + "\n\nReply briefly."
    tools_params = [r.body["tools"] for r in fake_openai.requests]
    assert all(t == tools_params[0] for t in tools_params)
    assert all("Reply briefly." not in str(m.get("content")) for m in history)
    assert validate(fake_openai.requests[-1].body["messages"]) == []


async def test_underscore_keys_and_extra_fields_never_reach_the_wire(fake_openai: FakeOpenAIServer):
    history = [
        {"role": "user", "content": "earlier", "_id": 17, "_compressed_summary": True,
         "timestamp": 123.0},
        {"role": "assistant", "content": "ok", "_secret": "sk-should-not-leak", "reasoning": "r",
         "finish_reason": "stop"},
    ]
    agent, _ = make_agent([settings(fake_openai)])
    terminal(await collect(agent.run_turn(history, {"role": "user", "content": "now", "_x": 1})))
    sent = fake_openai.requests[0].body["messages"]
    assert sent[1:] == [{"role": "user", "content": "earlier"},
                        {"role": "assistant", "content": "ok"},
                        {"role": "user", "content": "now"}]
    assert "_" not in "".join(k[0] for m in sent for k in m)
    assert history[0]["_id"] == 17  # the caller's history is untouched


async def test_lone_surrogates_are_scrubbed(fake_openai: FakeOpenAIServer):
    history = [{"role": "user", "content": "bad \ud800 char"},
               {"role": "assistant", "content": "pair \ud83d\ude00 ok"}]
    agent, _ = make_agent([settings(fake_openai)])
    final = terminal(await collect(agent.run_turn(history, "more \udfff here")))
    assert isinstance(final, Final)
    sent = fake_openai.requests[0].body["messages"]
    assert sent[1]["content"] == "bad \ufffd char"
    assert sent[2]["content"] == "pair \U0001F600 ok"
    assert sent[3]["content"] == "more \ufffd here"


async def test_orphaned_history_is_repaired_before_the_request(fake_openai: FakeOpenAIServer):
    history = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "echo", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "zz", "content": "stray"},
        {"role": "user", "content": "b"},
    ]
    agent, _ = make_agent([settings(fake_openai)])
    terminal(await collect(agent.run_turn(history, "c")))
    sent = fake_openai.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert sent[4]["tool_call_id"] == "c2" and sent[4]["content"].startswith("[no result")
    assert sent[5]["content"] == "b\n\nc"
    assert validate(sent) == []


async def test_endpoint_refusing_streams_is_served_without_streaming():
    async with FakeOpenAIServer(refuse_streaming=True) as server:
        server.enqueue(tool_calls(call("echo", {"x": 1})), text("plain answer"))
        agent, _ = make_agent([settings(server)])
        events = await collect(agent.run_turn([], "hi"))
        final = terminal(events)
        assert isinstance(final, Final) and final.text == "plain answer"
        assert [e.text for e in events if isinstance(e, TextDelta)] == ["plain answer"]
        assert [r.stream for r in server.requests] == [True, False, False]
