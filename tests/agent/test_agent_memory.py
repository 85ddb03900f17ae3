"""The turn loop with an external memory provider (a real `MemoryManager`) against the fake
model: the recall rides on the request copy of the new user message for the whole turn, and
nothing else changes."""

from __future__ import annotations

import asyncio
import copy

from agent_core.agent import Agent, AgentConfig
from agent_core.events import Final, Interrupted
from agent_core.interrupt import InterruptSignal
from agent_core.memory import FENCE_OPEN, MemoryManager, MemorySettings, UserScope
from agent_core.provider import ProviderRouter
from tests.agent.doubles import FAST, MiniRegistry, collect, echo_tool, settings, terminal
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.memory_providers.recorder import RecorderSettings, RecordingProvider

SCOPE = UserScope("api:alice", "s1")


def _agent(server: FakeOpenAIServer, provider: RecordingProvider,
           settings_: MemorySettings | None = None) -> Agent:
    manager = MemoryManager(provider, settings_)
    return Agent(ProviderRouter([settings(server)]), MiniRegistry({"echo": echo_tool}),
                 "You are a test agent.", config=AgentConfig(**FAST),
                 memory=manager.for_turn(SCOPE))


async def test_recall_rides_on_every_request_of_the_turn_and_nothing_else(
    fake_openai: FakeOpenAIServer
) -> None:
    provider = RecordingProvider(RecorderSettings())
    provider.memories[SCOPE.principal] = ["Alice's cat is called Tom"]
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    before = copy.deepcopy(history)
    fake_openai.enqueue(tool_calls(call("echo", {"n": 1})), text("Tom."))
    events = await collect(_agent(fake_openai, provider).run_turn(history, "my cat?"))
    final = terminal(events)
    assert isinstance(final, Final) and final.text == "Tom."
    for req in fake_openai.requests:
        msgs = req.body["messages"]
        assert msgs[0] == {"role": "system", "content": "You are a test agent."}
        assert msgs[1]["content"] == "hi"  # an earlier user message: as it was
        assert msgs[3]["content"].startswith(f"my cat?\n\n{FENCE_OPEN}\n")
        assert "- remembered: Alice's cat is called Tom" in msgs[3]["content"]
    assert history == before
    assert FENCE_OPEN not in str(final.messages)
    assert provider.of("recall") == [("my cat?", SCOPE)]  # once per turn, not per request


async def test_a_multimodal_message_gets_the_recall_as_one_more_text_part(
    fake_openai: FakeOpenAIServer
) -> None:
    provider = RecordingProvider(RecorderSettings())
    provider.memories[SCOPE.principal] = ["Alice collects stamps"]
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    message = {"role": "user", "content": [{"type": "text", "text": "what is this?"}, image]}
    fake_openai.enqueue(text("A stamp."))
    await collect(_agent(fake_openai, provider).run_turn([], message))
    parts = fake_openai.requests[0].body["messages"][1]["content"]
    assert parts[:2] == [{"type": "text", "text": "what is this?"}, image]
    assert parts[2]["type"] == "text" and parts[2]["text"].startswith(FENCE_OPEN)
    assert provider.of("recall") == [("what is this?", SCOPE)]
    assert len(message["content"]) == 2  # the caller's message is untouched


async def test_an_interrupt_during_a_slow_recall_stops_the_turn(
    fake_openai: FakeOpenAIServer
) -> None:
    provider = RecordingProvider(RecorderSettings(recall_delay_s=30))
    signal = InterruptSignal()
    agent = _agent(fake_openai, provider, MemorySettings(recall_timeout_s=60))
    turn = asyncio.create_task(collect(agent.run_turn([], "hello", interrupt=signal)))
    while not provider.of("recall"):
        await asyncio.sleep(0.01)
    signal.set("stopped by user")
    events = await asyncio.wait_for(turn, timeout=20)  # the recall would take 30 s
    assert isinstance(terminal(events), Interrupted)
    assert fake_openai.requests == []


async def test_the_same_question_asked_again_carries_only_its_own_turns_recall(
    fake_openai: FakeOpenAIServer
) -> None:
    """The recall extends the request copy of the new message in place; the copy of a text
    seen before (the wire copies are memoised) must not carry an earlier turn's recall."""
    provider = RecordingProvider(RecorderSettings())
    provider.memories[SCOPE.principal] = ["Alice's cat is called Tom"]
    agent = _agent(fake_openai, provider)
    fake_openai.enqueue(text("Tom."), text("Still Tom."))
    first = terminal(await collect(agent.run_turn([], "my cat?")))
    assert isinstance(first, Final)
    history = [{"role": "user", "content": "my cat?"}, *first.messages[-1:]]
    second = terminal(await collect(agent.run_turn(history, "my cat?")))
    assert isinstance(second, Final) and second.text == "Still Tom."
    msgs = fake_openai.requests[-1].body["messages"]
    assert msgs[1] == {"role": "user", "content": "my cat?"}  # the earlier one: as stored
    assert msgs[3]["content"].count(FENCE_OPEN) == 1
    assert msgs[3]["content"].startswith(f"my cat?\n\n{FENCE_OPEN}\n")
