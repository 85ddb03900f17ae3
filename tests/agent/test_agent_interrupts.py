"""Interrupts: mid-stream, mid-tool, while the model hangs, during a backoff wait.

After every interrupt the NEXT request must be valid for the API (checked on the body the fake
server received)."""

from __future__ import annotations

import asyncio

from agent_core.events import Final, Interrupted, TextDelta, ToolStarted
from agent_core.interrupt import InterruptSignal
from agent_core.messages import validate
from tests.agent.doubles import (
    collect,
    echo_tool,
    make_agent,
    settings,
    terminal,
    until,
    wait_for_interrupt_tool,
)
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    Reply,
    call,
    hang,
    rate_limited,
    text,
    tool_calls,
)


async def _next_request_is_valid(agent, server, history, user, events) -> list[dict]:
    end = terminal(events)
    history = [*history, {"role": "user", "content": user}, *end.messages]
    server.enqueue(text("fresh answer"))
    final = terminal(await collect(agent.run_turn(history, "next message")))
    assert isinstance(final, Final) and final.text == "fresh answer"
    sent = server.requests[-1].body["messages"]
    assert validate(sent) == [], validate(sent)
    return sent


async def test_interrupt_mid_stream_keeps_partial_text_and_next_request_is_valid(
    fake_openai: FakeOpenAIServer,
):
    words = " ".join(f"w{i}" for i in range(200))
    fake_openai.enqueue(Reply(text=words, delay_s=0.02))
    agent, _ = make_agent([settings(fake_openai)])
    events = []
    async for ev in agent.run_turn([], "talk a lot"):
        events.append(ev)
        if isinstance(ev, TextDelta) and len(events) == 3:
            agent.interrupt("user sent a new message")
    end = terminal(events)
    assert isinstance(end, Interrupted) and end.reason == "user sent a new message"
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert end.partial_text == streamed and 0 < len(streamed) < len(words)
    assert end.messages == [{"role": "assistant", "content": streamed,
                             "finish_reason": "interrupted"}]
    sent = await _next_request_is_valid(agent, fake_openai, [], "talk a lot", events)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]


async def test_interrupt_mid_tool_fills_in_results_for_unrun_calls(fake_openai: FakeOpenAIServer):
    fake_openai.enqueue(tool_calls(call("slow", {}, id="c_slow"), call("echo", {}, id="c_echo"),
                                   call("echo", {"k": 2}, id="c_echo2")))
    agent, registry = make_agent([settings(fake_openai)],
                                 tools={"slow": wait_for_interrupt_tool, "echo": echo_tool})
    events = []
    async for ev in agent.run_turn([], "use tools"):
        events.append(ev)
        if isinstance(ev, ToolStarted) and ev.call_id == "c_echo2":
            asyncio.get_running_loop().call_later(0.05, agent.interrupt, "stop please")
    end = terminal(events)
    assert isinstance(end, Interrupted)
    assert registry.executed == ["c_slow"]
    results = {m["tool_call_id"]: m["content"] for m in end.messages if m["role"] == "tool"}
    assert results["c_slow"] == "stopped early"
    assert results["c_echo"].startswith("[interrupted:") and "stop please" in results["c_echo"]
    assert results["c_echo2"].startswith("[interrupted:")
    assert len(fake_openai.requests) == 1
    sent = await _next_request_is_valid(agent, fake_openai, [], "use tools", events)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "tool",
                                         "user"]


async def test_tool_ignoring_the_interrupt_is_cancelled_after_the_grace(fake_openai: FakeOpenAIServer):
    async def stubborn(args, ctx):
        await asyncio.sleep(3600)
        return "never"

    fake_openai.enqueue(tool_calls(call("stubborn", {}, id="c1")))
    agent, _ = make_agent([settings(fake_openai)], tools={"stubborn": stubborn})
    signal = InterruptSignal()
    task = asyncio.create_task(collect(agent.run_turn([], "x", interrupt=signal)))
    await until(lambda: len(fake_openai.requests) == 1)
    await asyncio.sleep(0.05)
    signal.set("cancelled by test")
    events = await asyncio.wait_for(task, 10)
    end = terminal(events)
    assert isinstance(end, Interrupted)
    assert end.messages[-1]["tool_call_id"] == "c1"
    assert end.messages[-1]["content"].startswith("[interrupted:")


async def test_interrupt_while_the_model_hangs(fake_openai: FakeOpenAIServer):
    fake_openai.enqueue(hang())
    agent, _ = make_agent([settings(fake_openai)])
    task = asyncio.create_task(collect(agent.run_turn([], "are you there?")))
    await until(lambda: len(fake_openai.requests) == 1)
    agent.interrupt("new message")
    events = await asyncio.wait_for(task, 10)
    end = terminal(events)
    assert isinstance(end, Interrupted) and end.messages == [] and end.partial_text == ""
    sent = await _next_request_is_valid(agent, fake_openai, [], "are you there?", events)
    assert sent[-1]["content"] == "are you there?\n\nnext message"


async def test_interrupt_wins_over_a_backoff_wait(fake_openai: FakeOpenAIServer):
    fake_openai.enqueue(rate_limited(retry_after=600))
    agent, _ = make_agent([settings(fake_openai)], retry_after_cap_s=600)
    task = asyncio.create_task(collect(agent.run_turn([], "x")))
    await until(lambda: len(fake_openai.requests) == 1)
    await asyncio.sleep(0.05)
    agent.interrupt("gave up waiting")
    events = await asyncio.wait_for(task, 10)
    assert isinstance(terminal(events), Interrupted)
    assert len(fake_openai.requests) == 1


async def test_interrupt_before_the_turn_starts_sends_nothing(fake_openai: FakeOpenAIServer):
    agent, _ = make_agent([settings(fake_openai)])
    signal = InterruptSignal()
    signal.set("too late")
    end = terminal(await collect(agent.run_turn([], "x", interrupt=signal)))
    assert isinstance(end, Interrupted) and end.reason == "too late"
    assert fake_openai.requests == []


def test_interrupt_signal_callbacks_run_once_and_can_be_removed():
    sig = InterruptSignal()
    seen: list[str] = []
    sig.on_set(lambda: seen.append("a"))
    remove_b = sig.on_set(lambda: seen.append("b"))
    remove_b()
    sig.set("stop")
    sig.set("again")
    assert seen == ["a"] and sig.reason == "stop"
    sig.on_set(lambda: seen.append("late"))  # already set: called at once
    assert seen == ["a", "late"]


async def test_a_turn_whose_signal_is_already_set_ends_interrupted_without_a_request(
    fake_openai: FakeOpenAIServer,
):
    agent, _ = make_agent([settings(fake_openai)])
    signal = InterruptSignal()
    signal.set("stopped before it began")
    events = await asyncio.wait_for(collect(agent.run_turn([], "hello", interrupt=signal)), 5)
    assert isinstance(terminal(events), Interrupted)
    assert fake_openai.requests == []
