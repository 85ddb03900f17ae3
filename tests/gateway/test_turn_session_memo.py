"""A turn writes to the session its key's last turn used without looking it up first; these
are the paths that change a key's live session meanwhile (two paths, one chat): the next
message must land in the key's live session, never in the one remembered."""

from __future__ import annotations

from gateway.turns import SessionResolver
from tests.fakes.openai_server import text
from tests.gateway.runtime_harness import KEY, runner_for, user_texts


def _user_contents(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


async def test_a_session_ended_by_another_process_is_not_written_to(tmp_path, model):
    model.enqueue(text("First."), text("Second."), text("Third."))
    async with runner_for(tmp_path, model) as (runner, fake):
        await fake.inject("one", chat_id="c1", user_id="u1")
        await fake.wait_turns(1)
        first = await runner.store.find_by_session_key(KEY)
        await fake.inject("two", chat_id="c1", user_id="u1")
        await fake.wait_turns(2)
        assert await user_texts(runner, first.id) == ["one", "two"]

        # Another process (`hermes sessions`, a replica) ends it behind this one's back.
        assert await runner.store.end_session(first.id, "archived")
        await fake.inject("three", chat_id="c1", user_id="u1")
        await fake.wait_turns(3)
        await fake.wait_for(lambda: "Third." in fake.messages("c1"))

        live = await runner.store.find_by_session_key(KEY)
        assert live is not None and live.id != first.id and live.ended_at is None
        assert await user_texts(runner, first.id) == ["one", "two"]
        assert await user_texts(runner, live.id) == ["three"]
        assert _user_contents(model.requests[2].body) == ["three"]
        assert (await runner.store.get_session(first.id)).message_count == 4


async def test_a_session_started_elsewhere_for_the_key_takes_the_next_message(tmp_path, model):
    model.enqueue(text("First."), text("Second."))
    async with runner_for(tmp_path, model) as (runner, fake):
        await fake.inject("one", chat_id="c1", user_id="u1")
        await fake.wait_turns(1)
        first = await runner.store.find_by_session_key(KEY)
        # A newer live session for the same chat, made by another process (the first one
        # stays open: the newest live session of a key is the one it talks to).
        other = await runner.store.create_session(
            source="fake", user_id="u1", session_key=KEY, chat_id="c1", chat_type="dm",
            system_prompt="elsewhere")
        await fake.inject("two", chat_id="c1", user_id="u1")
        await fake.wait_turns(2)
        assert await user_texts(runner, other.id) == ["two"]
        assert await user_texts(runner, first.id) == ["one"]
        assert model.requests[1].body["messages"][0] == {"role": "system",
                                                         "content": "elsewhere"}


async def test_new_then_a_message_goes_to_the_new_session(tmp_path, model):
    model.enqueue(text("First."), text("Fresh."))
    async with runner_for(tmp_path, model) as (runner, fake):
        await fake.inject("one", chat_id="c1", user_id="u1")
        await fake.wait_turns(1)
        first = await runner.store.find_by_session_key(KEY)
        await fake.inject("/new", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: any("new session" in m.lower() for m in fake.messages("c1")))
        await fake.inject("two", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: "Fresh." in fake.messages("c1"))
        live = await runner.store.find_by_session_key(KEY)
        assert live.id != first.id
        assert await user_texts(runner, live.id) == ["two"]
        assert await user_texts(runner, first.id) == ["one"]
        assert _user_contents(model.requests[1].body) == ["two"]


def test_the_resolver_remembers_a_bounded_number_of_keys(monkeypatch):
    import gateway.turns.sessions as mod

    monkeypatch.setattr(mod, "KNOWN_SESSIONS_MAX", 3)
    r = SessionResolver(store=None, agents=None)  # type: ignore[arg-type]  # not used here
    for i in range(5):
        r.remember(f"k{i}", f"s{i}")
    assert [r.known(f"k{i}") for i in range(5)] == [None, None, "s2", "s3", "s4"]
    r.known("k2")  # used: kept over k3
    r.remember("k5", "s5")
    assert (r.known("k2"), r.known("k3")) == ("s2", None)
    r.forget("k2")
    assert r.known("k2") is None
