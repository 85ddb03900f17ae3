"""The streaming rule of one turn (pure, no HTTP)."""

from __future__ import annotations

import pytest

from adapters.api.turns import Turn, TurnRegistry, strip_cursor


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Hello▌", "Hello"),
        ("Hello ▌", "Hello"),
        ("line one\n▌", "line one"),
        ("Hello█", "Hello"),
        ("no cursor ", "no cursor "),
        ("", ""),
        ("▌", ""),
    ],
)
def test_strip_cursor(raw: str, expected: str) -> None:
    assert strip_cursor(raw) == expected


async def test_prefix_extending_edits_stream_only_the_new_suffix() -> None:
    turn = Turn("e1", "chat")
    steps = []
    for frame in ("He▌", "Hello ▌", "Hello world▌"):
        turn.update("m1", frame)
        steps.append(turn.streamed)
    assert steps == ["He", "Hello", "Hello world"]
    turn.finish(ok=True, error=None)
    assert turn.streamed == turn.text == "Hello world"


async def test_rewrite_is_held_until_final_then_resent_from_changed_line() -> None:
    turn = Turn("e1", "chat")
    turn.update("m1", "Intro line\nDraft answer▌")
    turn.update("m1", "Intro line\nBetter▌")
    assert turn.streamed == "Intro line\nDraft answer"
    turn.finish(ok=True, error=None)
    assert turn.text == "Intro line\nBetter"
    assert turn.streamed == "Intro line\nDraft answer\n\nBetter"


async def test_rewrite_that_later_extends_again_resumes_streaming() -> None:
    turn = Turn("e1", "chat")
    turn.update("m1", "abc▌")
    turn.update("m1", "xyz▌")
    assert turn.streamed == "abc"
    turn.update("m1", "abc def▌")
    assert turn.streamed == "abc def"


async def test_updates_after_finish_are_ignored() -> None:
    turn = Turn("e1", "chat")
    turn.update("m1", "done")
    turn.finish(ok=True, error=None)
    turn.update("m1", "changed later")
    turn.finish(ok=False, error="late")
    assert (turn.text, turn.ok, turn.error) == ("done", True, None)


async def test_registry_routes_by_reply_to_then_newest_open_turn_of_chat() -> None:
    registry = TurnRegistry(keep_done=1)
    a = registry.open("a", "chat")
    b = registry.open("b", "chat")
    registry.open("c", "other")
    assert registry.for_reply("chat", "a") is a
    assert registry.for_reply("chat", None) is b
    assert registry.for_reply("nobody", None) is None
    message_id = registry.bind_message(a)
    assert registry.by_message(message_id) is a
    registry.complete(a, ok=True, error=None)
    assert registry.for_reply("chat", "a") is None
    assert registry.get("a") is a
    registry.complete(b, ok=True, error=None)
    assert registry.get("a") is None
    assert registry.by_message(message_id) is None
