"""A chat's history is repaired once and then only what is new (`TranscriptWire`): the wire
copy must equal a full `repair` of the same messages every turn, whatever the history does
between turns (grows, is compressed or rewound, has a message edited in place)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.messages import TranscriptWire, TranscriptWires, repair

Message = dict[str, Any]


def _call(i: int, name: str = "read_file") -> dict[str, Any]:
    return {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}


@st.composite
def messages(draw: st.DrawFn) -> Message:
    kind = draw(st.sampled_from(["user", "assistant", "calls", "tool", "parts", "odd"]))
    text = draw(st.sampled_from(["", "hi", "again", "x\ud800y", "the same"]))
    if kind == "user":
        return {"role": "user", "content": text, "_id": draw(st.integers(0, 3))}
    if kind == "assistant":
        return {"role": "assistant", "content": text or None}
    if kind == "calls":
        ids = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3))
        return {"role": "assistant", "content": None, "tool_calls": [_call(i) for i in ids]}
    if kind == "tool":
        return {"role": "tool", "tool_call_id": f"c{draw(st.integers(0, 6))}", "content": text}
    if kind == "parts":
        return {"role": "user", "content": [{"type": "text", "text": text or "p"}]}
    return {"role": "narrator", "content": text}


@settings(max_examples=300, deadline=None)
@given(history=st.lists(messages(), max_size=40), cuts=st.lists(st.integers(0, 40), max_size=6),
       edits=st.lists(st.tuples(st.integers(0, 39), messages()), max_size=2),
       new=st.one_of(st.none(), messages()))
def test_every_turn_equals_a_full_repair(history: list[Message], cuts: list[int],
                                         edits: list[tuple[int, Message]],
                                         new: Message | None) -> None:
    wire = TranscriptWire()
    grown = sorted(min(c, len(history)) for c in cuts) + [len(history)]
    for turn, n in enumerate(grown):
        prior = copy.deepcopy(history[:n])  # storage hands out fresh copies every turn
        if turn == len(grown) - 1:  # the history changes under it: edits in place
            for at, msg in edits:
                if at < len(prior):
                    prior[at] = msg
        source = [*prior, *([new] if new is not None else [])]
        got = wire.repair(source, keep=len(prior))
        assert got == repair(copy.deepcopy(source))


def test_a_shorter_history_starts_over() -> None:
    wire = TranscriptWire()
    long = [{"role": "user", "content": f"m{i}"} if i % 2 == 0
            else {"role": "assistant", "content": f"r{i}"} for i in range(10)]
    wire.repair(long)
    assert len(wire) == 10
    assert wire.repair(long[:3]) == repair(long[:3])  # a rewind
    assert len(wire) == 3


def test_what_the_caller_changes_is_not_remembered() -> None:
    wire = TranscriptWire()
    history = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    first = wire.repair([*history, {"role": "user", "content": "now"}], keep=2)
    first[-1]["content"] += "\n\nrecalled memory"  # what the memory recall does
    first[0] = {"role": "user", "content": "replaced"}
    first.append({"role": "assistant", "content": "the turn's reply"})
    second = wire.repair([*history, {"role": "user", "content": "now"}], keep=2)
    assert second == repair([*history, {"role": "user", "content": "now"}])


def test_an_edit_in_place_of_a_remembered_message_is_noticed() -> None:
    wire = TranscriptWire()
    history = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    wire.repair(history)
    history[1]["content"] = "revised"  # e.g. an image's description replacing a placeholder
    assert wire.repair(history)[1]["content"] == "revised"


def test_the_cache_is_bounded_by_transcripts_and_messages() -> None:
    cache = TranscriptWires(max_transcripts=3, max_messages=25)
    for i in range(5):
        cache.get(f"s{i}").repair([{"role": "user", "content": "x"}] * 10)
    assert len(cache) <= 3
    assert sum(len(cache.get(k)) for k in ("s4",)) == 10  # the newest is kept
    big = cache.get("s9")
    big.repair([{"role": "user", "content": "y"}] * 30)
    cache.get("s9")
    assert len(cache) == 1  # the oldest went first; the one in use stays


def test_the_message_bound_holds_within_one_turn_per_transcript_between_recounts() -> None:
    """Sizes are taken at each get (before that turn adds to its transcript) and recounted
    whole every RECOUNT_EVERY gets: the bound is never passed by more than one turn's
    growth per transcript, and a recount puts it right."""
    cache = TranscriptWires(max_transcripts=100, max_messages=60)
    turn = [{"role": "user", "content": "x"}] * 6
    for i in range(3 * TranscriptWires.RECOUNT_EVERY):
        cache.get(f"s{i}").repair(turn)  # a new transcript each time, one turn of 6
        remembered = sum(len(w) for w in cache._items.values())  # noqa: SLF001
        assert remembered <= 60 + 6 * len(cache)
        if (i + 1) % TranscriptWires.RECOUNT_EVERY == 0:  # this get recounted
            assert remembered <= 60 + 6  # only the turn after the recount is uncounted
    assert len(cache) < 3 * TranscriptWires.RECOUNT_EVERY  # evictions happened
