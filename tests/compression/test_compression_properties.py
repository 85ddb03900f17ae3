"""Invariants over generated histories: one summary, alternation, intact tool pairs."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_core.compression import COMPRESSED_SUMMARY_KEY, CompressionSettings, ContextCompressor
from tests.compression.compression_support import (
    FIXED_NOW,
    FakeSummarizer,
    roles_alternate,
    tool_pairs_intact,
)

turn_shape = st.tuples(
    st.integers(0, 2),  # tool rounds
    st.integers(1, 3),  # tool calls per round
    st.integers(10, 4000),  # output size
    st.booleans(),  # user turn present (False = agent-only continuation)
)


def build(shapes, with_system: bool) -> list[dict]:
    msgs: list[dict] = [{"role": "system", "content": "sys"}] if with_system else []
    n = 0
    last_role = None
    for rounds, calls, size, has_user in shapes:
        if has_user or last_role in (None, "assistant"):
            msgs.append({"role": "user", "content": f"request {n}"})
        for _ in range(rounds):
            ids = [f"c{n}_{k}" for k in range(calls)]
            n += 1
            msgs.append({"role": "assistant", "content": "", "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "terminal", "arguments": "{}"}} for i in ids
            ]})
            msgs += [{"role": "tool", "tool_call_id": i, "content": "o" * size} for i in ids]
        msgs.append({"role": "assistant", "content": f"answer {n}"})
        last_role = "assistant"
        n += 1
    return msgs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shapes=st.lists(turn_shape, min_size=1, max_size=30),
    with_system=st.booleans(),
    rounds=st.integers(1, 3),
    protect=st.integers(0, 4),
    keep=st.one_of(st.none(), st.integers(0, 3)),
)
def test_compression_invariants_hold(shapes, with_system, rounds, protect, keep):
    eng = ContextCompressor(
        FakeSummarizer(),
        context_length=8_000,
        settings=CompressionSettings(protect_first_n=protect, aux_context_length=8_000),
        clock=lambda: FIXED_NOW,
        offload_at=10**9,
    )
    msgs = build(shapes, with_system)
    assert roles_alternate(msgs)
    for _ in range(rounds):
        r = asyncio.run(eng.compress(msgs, force=True, keep_last_turns=keep))
        assert r.status in ("compressed", "noop"), r.reason
        assert roles_alternate(r.messages), [m["role"] for m in r.messages]
        assert tool_pairs_intact(r.messages)
        assert sum(1 for m in r.messages if m.get(COMPRESSED_SUMMARY_KEY)) <= 1
        if r.status == "compressed":
            assert sum(1 for m in r.messages if m.get(COMPRESSED_SUMMARY_KEY)) == 1
        bridge = [{"role": "assistant", "content": "ok"}] if r.messages[-1]["role"] == "user" else []
        msgs = r.messages + bridge + build(shapes[:3], False)
