"""A plugin memory provider (installed as a distribution with a `hermes.memory_providers` entry
point, loaded like one from PyPI) in the real gateway with the fake platform and the fake
model: which calls it gets, for whom, and when."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_core.memory import UserScope
from tests.fakes.openai_server import FakeOpenAIServer, text
from tests.gateway.runtime_harness import KEY, runner_for
from tests.memory_providers.recorder import RecordingProvider, install_plugin


@pytest.fixture(autouse=True)
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(install_plugin(tmp_path / "site")))
    yield


async def _turn(fake, msg: str, **kw) -> None:  # type: ignore[no-untyped-def]
    ev, _ = await fake.inject(msg, **kw)
    await fake.wait_for(lambda: any(t.reply_to == ev.message_id
                                    for t in fake.turns_completed), 20)


def _provider(runner) -> RecordingProvider:  # type: ignore[no-untyped-def]
    memory = runner.parts.agents.memory
    assert memory is not None and isinstance(memory.manager.provider, RecordingProvider)
    return memory.manager.provider


async def test_compaction_and_new_tell_the_provider_and_each_turn_syncs_once(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    async with runner_for(tmp_path, model, memory__provider="recorder") as (runner, fake):
        provider = _provider(runner)
        for i in range(4):
            model.enqueue(text(f"Answer {i}. " + "detail " * 30))
            await _turn(fake, f"question number {i} " + "context " * 30)
        parent = await runner.store.find_by_session_key(KEY)
        model.enqueue(text("## Goal\nSummarized."))
        await _turn(fake, "/compress")
        child = await runner.store.find_by_session_key(KEY)
        assert child is not None and parent is not None and child.parent_session_id == parent.id
        model.enqueue(text("Continuing."))
        await _turn(fake, "go on")
        await _turn(fake, "/new")
        await runner.parts.agents.memory.manager.idle()

        who = "fake:u1"
        syncs = provider.of("sync")
        assert [u.split(" ")[:3] for u, _, _ in syncs] == [
            ["question", "number", "0"], ["question", "number", "1"],
            ["question", "number", "2"], ["question", "number", "3"], ["go", "on"]]
        assert {s.principal for _, _, s in syncs} == {who}
        assert [s.session_id for _, _, s in syncs] == [parent.id] * 4 + [child.id]
        assert syncs[-1][1] == "Continuing."
        assert len(provider.of("recall")) == 5  # one per turn; commands are no turns
        (count, scope), = provider.of("pre_compress")
        assert scope == UserScope(who, parent.id) and count >= 8
        assert provider.of("switch") == [(UserScope(who, parent.id), child.id, "compression")]
        assert provider.of("end") == [(UserScope(who, child.id), "new_session")]
    summary = [r for r in model.requests if "MEMORY PROVIDER CONTEXT" in str(r.body)]
    assert len(summary) == 1 and "fake:u1 asked 4 things" in str(summary[0].body)
    assert provider.calls[0] == ("start", None) and provider.calls[-1] == ("close", None)


async def test_groups_are_served_only_with_in_groups(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    group = {"chat_id": "g1", "chat_type": "group", "mentions_bot": True}
    async with runner_for(tmp_path, model, memory__provider="recorder") as (runner, fake):
        provider = _provider(runner)
        model.enqueue(text("Hi group."))
        await _turn(fake, "@bot hello all", **group)
        await runner.parts.agents.memory.manager.idle()
        assert provider.of("recall") == [] and provider.of("sync") == []
    async with runner_for(tmp_path / "b", model, memory__provider="recorder",
                          memory__in_groups=True) as (runner, fake):
        provider = _provider(runner)
        model.enqueue(text("Hi group."), text("Hi again."))
        await _turn(fake, "@bot hello all", user_id="u1", **group)
        await _turn(fake, "@bot me too", user_id="u2", **group)
        await runner.parts.agents.memory.manager.idle()
        assert [s.principal for _, s in provider.of("recall")] == ["fake:u1", "fake:u2"]
        assert [s.principal for _, _, s in provider.of("sync")] == ["fake:u1", "fake:u2"]


async def test_a_plugin_providers_recall_reaches_the_model_fenced(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    async with runner_for(tmp_path, model, memory__provider="recorder") as (runner, fake):
        provider = _provider(runner)
        provider.memories["fake:u1"] = ["the user's cat is called Tom"]
        model.enqueue(text("Tom, I remember."))
        await _turn(fake, "what is my cat called?")
    last = [m for m in model.requests[0].body["messages"] if m["role"] == "user"][-1]
    assert last["content"].startswith("what is my cat called?\n\n<memory-context>")
    assert "- remembered: the user's cat is called Tom" in last["content"]
