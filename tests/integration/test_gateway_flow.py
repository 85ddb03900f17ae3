"""Full stack through FakeAdapter: what arrives in the chat, what the model received, the DB."""

from __future__ import annotations

import asyncio

import pytest

from gateway.principals import folder_name
from tests.fakes.openai_server import FakeOpenAIServer, Reply, call, hang, text, tool_calls
from tests.integration.harness import gateway


@pytest.fixture
async def model():
    async with FakeOpenAIServer() as server:
        yield server


async def test_message_gets_streamed_reply_and_is_stored(tmp_path, model):
    model.enqueue(text("Hello there, friend!", chunk_chars=3, delay_s=0.01))
    async with gateway(tmp_path, model) as (runner, fake):
        await fake.inject("hi bot", chat_id="c1", user_id="u1")
        await fake.wait_for_messages("c1", 1)
        await fake.wait_turns(1)
        assert fake.messages("c1") == ["Hello there, friend!"]
        # The model saw the system prompt and the user message.
        body = model.requests[0].body
        assert body["messages"][0]["role"] == "system"
        assert body["messages"][-1] == {"role": "user", "content": "hi bot"}
        session = await runner.store.find_by_session_key("fake:dm:c1")
        history = await runner.store.load_history(session.id)
        assert [m["role"] for m in history] == ["user", "assistant"]
        assert history[1]["content"] == "Hello there, friend!"


async def test_same_event_twice_makes_one_turn_also_after_restart(tmp_path, model):
    async with gateway(tmp_path, model) as (_runner, fake):
        first = await fake.inject("once", chat_id="c1", user_id="u1", event_id="evt-1")
        again = await fake.inject("once", chat_id="c1", user_id="u1", event_id="evt-1")
        await fake.wait_turns(1)
        assert first.new and not again.new
    async with gateway(tmp_path, model) as (_runner, fake):
        third = await fake.inject("once", chat_id="c1", user_id="u1", event_id="evt-1")
        assert not third.new
        await asyncio.sleep(0.2)
    assert len(model.requests) == 1


async def test_unknown_user_gets_pairing_code_not_the_agent(tmp_path, model):
    async with gateway(tmp_path, model) as (runner, fake):
        await fake.inject("hello?", chat_id="stranger-chat", user_id="stranger")
        await fake.wait_for_messages("stranger-chat", 1)
        reply = fake.messages("stranger-chat")[0]
        assert "hermes pairing approve fake" in reply
        code = reply.split("hermes pairing approve fake ")[1].strip()
        assert len(code) == 8
        assert model.requests == []
        # The owner approves; the user now reaches the agent.
        assert await runner.store.approve_pairing_code("fake", code) is not None
        await fake.inject("now?", chat_id="stranger-chat", user_id="stranger")
        await fake.wait_for_messages("stranger-chat", 2)
        assert len(model.requests) == 1


async def test_group_message_without_mention_never_reaches_agent(tmp_path, model):
    async with gateway(tmp_path, model) as (runner, fake):
        await fake.inject("chatter", chat_id="g1", user_id="u1", chat_type="group")
        await fake.inject("@bot hi", chat_id="g1", user_id="u1", chat_type="group",
                          mentions_bot=True)
        await fake.wait_for_messages("g1", 1)
        await fake.wait_turns(1)
        assert len(model.requests) == 1
        contents = [m.get("content") for m in model.requests[0].body["messages"]]
        assert "chatter" not in contents


async def test_tool_call_turn_runs_tool_and_answers(tmp_path, model):
    model.enqueue(
        tool_calls(call("write_file", {"path": "notes.txt", "content": "remember"})),
        text("Saved your note."),
    )
    async with gateway(tmp_path, model) as (runner, fake):
        await fake.inject("save a note", chat_id="c1", user_id="u1")
        await fake.wait_turns(1)
        assert fake.messages("c1")[-1] == "Saved your note."
        # The user's own workspace (workspace.shared: false).
        mine = tmp_path / "workspace" / "users" / folder_name("fake", "u1")
        assert (mine / "notes.txt").read_text() == "remember"
        second = model.requests[1].body["messages"]
        assert second[-1]["role"] == "tool"


async def test_interrupt_mode_stores_both_and_answers_the_second(tmp_path, model):
    model.enqueue(hang(30), text("Answer to the second."))
    async with gateway(tmp_path, model) as (runner, fake):
        await fake.inject("first question", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: len(model.requests) == 1)
        await asyncio.sleep(0.6)  # outside the burst-merge window
        await fake.inject("second question", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: "Answer to the second." in fake.messages("c1"), 10)
        session = await runner.store.find_by_session_key("fake:dm:c1")
        history = await runner.store.load_history(session.id)
        users = [m["content"] for m in history if m["role"] == "user"]
        assert users == ["first question", "second question"]
        # The interrupted turn has no answer, so the model sees both questions, newest last.
        last_request = model.requests[-1].body["messages"]
        assert last_request[-1]["role"] == "user"
        assert last_request[-1]["content"].endswith("second question")
        assert "first question" in last_request[-1]["content"]


async def test_queue_mode_keeps_order_over_20_rapid_messages(tmp_path, model):
    async with gateway(tmp_path, model, gateway__busy_mode="queue",
                       gateway__burst_merge_s=0) as (runner, fake):
        for i in range(20):
            await fake.inject(f"msg {i}", chat_id="c1", user_id="u1")
        await fake.wait_turns(20, timeout_s=30)
        asked = [r.body["messages"][-1]["content"] for r in model.requests]
        assert asked == [f"msg {i}" for i in range(20)]


async def test_stop_works_while_model_hangs(tmp_path, model):
    model.enqueue(hang(60))
    async with gateway(tmp_path, model) as (runner, fake):
        await fake.inject("long task", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: len(model.requests) == 1)
        await fake.inject("/stop", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: "⏹ Stopped." in fake.messages("c1"), 10)
        await fake.wait_for(lambda: not runner.manager.is_busy("fake:dm:c1"), 10)


async def test_status_and_new_commands(tmp_path, model):
    async with gateway(tmp_path, model) as (runner, fake):
        await fake.inject("hello", chat_id="c1", user_id="u1")
        await fake.wait_turns(1)
        old = await runner.store.find_by_session_key("fake:dm:c1")
        await fake.inject("/status", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: any("Session: " + old.id in m
                                        for m in fake.messages("c1")))
        await fake.inject("/new Fresh start", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: any("New session" in m for m in fake.messages("c1")))
        new = await runner.store.find_by_session_key("fake:dm:c1")
        assert new.id != old.id and new.title == "Fresh start"
        ended = await runner.store.get_session(old.id)
        assert ended.end_reason == "new_session"


async def test_steer_mode_injects_message_after_the_next_tool_call(tmp_path, model):
    model.enqueue(
        tool_calls(call("search_files", {"pattern": "*.txt"}), delay_s=0.3),
        text("Done, and I saw your extra note."),
    )
    async with gateway(tmp_path, model, gateway__busy_mode="steer") as (runner, fake):
        await fake.inject("find my files", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: len(model.requests) == 1)
        await asyncio.sleep(0.3)
        assert runner.manager.is_busy("fake:dm:c1")
        await fake.inject("also check the docs folder", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=10)
        await fake.wait_for(lambda: "Done, and I saw your extra note." in fake.messages("c1"))
        second = model.requests[1].body["messages"]
        roles = [m["role"] for m in second[-3:]]
        assert roles == ["assistant", "tool", "user"]
        assert second[-1]["content"] == "also check the docs folder"
        await asyncio.sleep(0.3)
        assert len(model.requests) == 2  # the steer was used, not run again as a turn
        session = await runner.store.find_by_session_key("fake:dm:c1")
        users = [m["content"] for m in await runner.store.load_history(session.id)
                 if m["role"] == "user"]
        assert users == ["find my files", "also check the docs folder"]
        # The steer was stored with the turn's messages: nothing left held for a restart.
        assert await runner.store.inbound_held() == []


async def test_a_steer_the_turn_never_used_runs_next_before_later_messages(tmp_path, model):
    """The agent ends its turn without another tool batch, so the steered text was never
    shown to it: it becomes the next turn, ahead of a message queued after it."""
    model.enqueue(
        text("First answer, slowly.", chunk_chars=2, delay_s=0.2),
        text("Answer to the steered note."),
        text("Answer to the photo message."),
    )
    async with gateway(tmp_path, model, gateway__busy_mode="steer") as (runner, fake):
        await fake.inject("question one", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: len(model.requests) == 1)
        await asyncio.sleep(0.6)  # past the burst window: not merged into the running turn
        await fake.inject("a note while you type", chat_id="c1", user_id="u1")
        await asyncio.sleep(0.6)  # a separate message, not a burst with the note
        # Attachments are never steered: this one is queued behind the turn.
        photo = tmp_path / "p.txt"
        photo.write_text("x")
        await fake.inject("and this file", chat_id="c1", user_id="u1",
                          attachments=[str(photo)])
        await fake.wait_for(lambda: len(model.requests) == 3, 15)
        await fake.wait_turns(3, timeout_s=15)
        asked = [r.body["messages"][-1]["content"] for r in model.requests]
        assert asked[0] == "question one"
        assert asked[1] == "a note while you type"
        assert asked[2].startswith("and this file")
        assert await runner.store.inbound_held() == []


async def test_command_for_another_bot_is_not_ours(tmp_path, model):
    from adapters.fake import FakeAdapter
    from gateway.ports import Identity

    named = FakeAdapter("fake")
    named.identity = Identity(id="42", username="hermesbot")  # as an adapter sets it on connect
    async with gateway(tmp_path, model, adapter=named) as (runner, fake):
        await fake.inject("/status@otherbot", chat_id="c1", user_id="u1")
        await fake.inject("/whoami@HermesBot", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: any("You are" in m for m in fake.messages("c1")))
        await fake.wait_turns(2)
        assert not any(m.startswith("Model:") for m in fake.messages("c1"))


async def test_automatic_compression_after_a_turn_rotates_and_tells_the_chat(tmp_path, model):
    # Replies large enough that the provider-reported prompt crosses the 8K-window threshold.
    big = "lorem ipsum dolor sit amet " * 120
    async with gateway(tmp_path, model, providers__main__context_length=16000,
                       compression__threshold_tokens=3000) as (runner, fake):
        for i in range(6):
            model.enqueue(text(f"answer {i}: {big}"))
            await fake.inject(f"question {i}", chat_id="c1", user_id="u1")
            await fake.wait_turns(i + 1)
        parent = (await runner.store.list_sessions(limit=5))[-1]
        await fake.wait_for(lambda: any("Context compacted" in m for m in fake.messages("c1")),
                            20)
        ended = await runner.store.get_session(parent.id)
        assert ended.end_reason == "compression"
        child = await runner.store.find_by_session_key("fake:dm:c1")
        lineage = [a.id for a in await runner.store.ancestors(child.id)]
        assert parent.id in lineage  # one or more rotations, all chained to the first session
        history = await runner.store.load_history(child.id)
        summaries = [m for m in history if str(m.get("content", "")).startswith(
            "[CONTEXT COMPACTION")]
        assert len(summaries) == 1
        # The summarizer request went to the model without tools; old rows stay searchable.
        summarizer = [r for r in model.requests if not r.body.get("tools")]
        assert summarizer, "no summarizer request"
        prompt = "".join(str(m.get("content")) for m in summarizer[0].body["messages"])
        assert "question" in prompt and "lorem ipsum" in prompt
        assert await runner.store.search("question 0")
        # The next turn continues in the child with the summary in its history (the default
        # responder echoes; a summarizer request may come first, so no scripted reply here).
        await runner.compression.wait_idle(child.id, 10)
        before = len(model.requests)
        await fake.inject("and now?", chat_id="c1", user_id="u1")
        await fake.wait_turns(7)
        turn = [r for r in model.requests[before:] if r.body.get("tools")]
        assert turn and any(str(m.get("content", "")).startswith("[CONTEXT COMPACTION")
                            for m in turn[0].body["messages"])


async def test_memory_reaches_the_prompt_only_after_a_compaction(tmp_path, model):
    model.enqueue(
        tool_calls(call("memory", {"action": "add", "target": "user",
                                   "content": "The user drinks green tea."})),
        text("Noted."),
    )
    async with gateway(tmp_path, model, compression__protect_first_n=1) as (runner, fake):
        await fake.inject("remember that I drink green tea", chat_id="c1", user_id="u1")
        await fake.wait_turns(1)
        user_md = tmp_path / "memories" / "users" / folder_name("fake", "u1") / "USER.md"
        assert "green tea" in user_md.read_text()  # on disk at once
        for i in range(3):
            await fake.inject(f"small talk {i}", chat_id="c1", user_id="u1")
            await fake.wait_turns(2 + i)
        # Frozen for the session: the prompt sent after the write does not contain it.
        assert "green tea" not in model.requests[-1].body["messages"][0]["content"]
        await fake.inject("/compress here 1", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: any("Compressed" in m for m in fake.messages("c1")), 20)
        await fake.inject("what do I drink?", chat_id="c1", user_id="u1")
        await fake.wait_turns(6)
        turn = [r for r in model.requests if r.body.get("tools")][-1]
        assert "The user drinks green tea." in turn.body["messages"][0]["content"]


async def test_no_adapter_connected_for_the_window_exits_1_for_the_service_manager(tmp_path,
                                                                                   model):
    from adapters.fake import FakeAdapter
    from gateway.paths import ProfilePaths, ensure_profile_dirs
    from gateway.ports import AdapterError
    from gateway.runner import GatewayRunner
    from tests.integration.harness import make_config

    fake = FakeAdapter("fake")
    fake.raise_on_start(AdapterError("platform unreachable"), times=1000)
    runner = GatewayRunner(
        make_config(model, gateway__unhealthy_exit_s=1.0,
                    gateway__adapter_connect_timeout_s=0.5),
        ensure_profile_dirs(ProfilePaths(tmp_path)), adapters={"fake": fake}, health_port=0)
    code = await asyncio.wait_for(runner.run(), 20)
    assert code == 1


async def test_the_turn_after_a_compaction_judges_it_with_that_turns_prompt(tmp_path, model):
    # One ineffective compaction already, and the last one awaits its verdict: the next turn's
    # real prompt (still over the threshold) must be judged against it, so the session is
    # now blocked from compressing again, not compressed a third time.
    async with gateway(tmp_path, model, providers__main__context_length=16000,
                       compression__threshold_tokens=3000) as (runner, fake):
        model.enqueue(text("hello back"))
        await fake.inject("hello", chat_id="c1", user_id="u1")
        await fake.wait_turns(1)
        session = await runner.store.find_by_session_key("fake:dm:c1")
        await runner.store.update_guard(session.id, ineffective_count=1, verify_pending=True)
        model.enqueue(Reply(text="still big", usage={
            "prompt_tokens": 5000, "completion_tokens": 3, "total_tokens": 5003}))
        await fake.inject("next", chat_id="c1", user_id="u1")
        await fake.wait_turns(2)
        guard = await runner.store.get_guard(session.id)
        assert guard.ineffective_count == 2
        assert guard.last_prompt_tokens == 5000
        assert runner.compression.pool.active(session.id) is None
        assert (await runner.store.get_session(session.id)).ended_at is None
