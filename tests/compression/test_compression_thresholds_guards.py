"""Trigger thresholds and the durable guards (cooldown ladder, anti-thrash)."""

from __future__ import annotations

import pytest

from agent_core.compression import (
    CompressionGuards,
    ContextCompressor,
    blocked_reason,
    compute_threshold,
    observe_prompt,
    record_completed,
    record_failure,
    record_ineffective,
)
from agent_core.compression.guards import COOLDOWN_LADDER
from tests.compression.compression_support import FIXED_NOW, FakeSummarizer, conversation, transient


def test_compression_threshold_half_of_large_window():
    assert compute_threshold(1_000_000) == 500_000


def test_compression_threshold_small_window_floor_is_higher():
    assert compute_threshold(200_000) == 150_000  # 0.75 floor under 512K
    assert compute_threshold(200_000, threshold_percent=0.9) == 180_000  # floor only raises


def test_compression_threshold_tokens_caps_the_trigger():
    assert compute_threshold(1_000_000, threshold_tokens=120_000) == 120_000
    assert compute_threshold(200_000, threshold_tokens=300_000) == 150_000


@pytest.mark.parametrize("ctx", [8_000, 16_000, 32_768, 128_000, 2_000_000])
def test_compression_threshold_works_for_any_window(ctx):
    t = compute_threshold(ctx)
    assert 0 < t < ctx


def test_compression_model_thresholds_longest_match_wins():
    table = {"gpt": 0.6, "gpt-4o-mini": 0.3, "claude": 0.9}
    assert compute_threshold(1_000_000, model="openai/gpt-4o-mini-2024", model_thresholds=table) == 300_000
    assert compute_threshold(1_000_000, model="GPT-5", model_thresholds=table) == 600_000
    assert compute_threshold(1_000_000, model="llama", model_thresholds=table) == 500_000
    # an explicit per-model value is not subject to the small-window floor
    assert compute_threshold(100_000, model="gpt-4o-mini", model_thresholds=table) == 30_000


def test_compression_should_compress_reports_reasons():
    eng = ContextCompressor(FakeSummarizer(), context_length=32_000, clock=lambda: FIXED_NOW)
    assert eng.should_compress(100) == (False, "below_threshold")
    assert eng.should_compress(eng.threshold_tokens) == (True, "threshold")
    cooling = CompressionGuards(cooldown_until=FIXED_NOW + 42)
    assert eng.should_compress(eng.threshold_tokens, cooling) == (False, "cooldown:42")
    stuck = CompressionGuards(ineffective_count=2, blocked_reason="ineffective")
    assert eng.should_compress(eng.threshold_tokens, stuck) == (False, "ineffective")


def test_compression_cooldown_ladder_grows_and_success_resets():
    g = CompressionGuards()
    waits = []
    for _ in range(5):
        g = record_failure(g, kind="transient", reason="timeout", now=0.0)
        waits.append(g.cooldown_until)
    assert waits == sorted(waits) and waits[0] == COOLDOWN_LADDER[0] and waits[2] > waits[1]
    assert waits[-1] == COOLDOWN_LADDER[-1]
    g = record_completed(g, saved_fraction=0.5, used_fallback=False)
    assert g.cooldown_until == 0 and g.failure_streak == 0
    assert record_failure(g, kind="transient", reason="x", now=0).cooldown_until == COOLDOWN_LADDER[0]


def test_compression_guards_roundtrip_dict():
    g = CompressionGuards(cooldown_until=5.0, cooldown_error="429", fallback_streak=1, ineffective_count=1)
    assert CompressionGuards.from_dict(g.to_dict()) == g
    assert CompressionGuards.from_dict({"ineffective_count": 1, "unknown": 3, "cooldown_error": None}) == CompressionGuards(ineffective_count=1)


def test_compression_two_ineffective_block_and_below_threshold_prompt_resets_one():
    g = record_completed(CompressionGuards(), saved_fraction=0.05, used_fallback=False)
    assert g.ineffective_count == 1 and blocked_reason(g, 0) is None
    g = observe_prompt(g, prompt_tokens=10, threshold=100)  # a healthy reading ends the streak
    assert g.ineffective_count == 0
    g = record_completed(g, saved_fraction=0.5, used_fallback=False)
    g = observe_prompt(g, prompt_tokens=150, threshold=100)  # next real prompt still too big
    g = record_ineffective(g)  # then a no-op
    assert blocked_reason(g, 0) == "ineffective"
    g = observe_prompt(g, prompt_tokens=10, threshold=100)
    assert blocked_reason(g, 0) == "ineffective"  # stays until forced or new session


def test_compression_two_fallbacks_in_a_row_block():
    g = record_completed(CompressionGuards(), saved_fraction=0.8, used_fallback=True)
    assert blocked_reason(g, 0) is None
    g = record_completed(g, saved_fraction=0.8, used_fallback=True)
    assert blocked_reason(g, 0) == "ineffective"


async def test_compression_noops_block_and_forced_manual_clears():
    eng = ContextCompressor(FakeSummarizer(), context_length=32_000, clock=lambda: FIXED_NOW)
    tiny = conversation(0) + [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    r1 = await eng.compress(tiny)
    assert r1.status == "noop"
    r2 = await eng.compress(tiny, guards=r1.guards)
    assert r2.guards.blocked_reason == "ineffective"
    assert eng.should_compress(10**9, r2.guards) == (False, "ineffective")
    r3 = await eng.compress(conversation(40), guards=r2.guards)
    assert r3.status == "skipped" and "ineffective" in r3.reason
    r4 = await eng.compress(conversation(40), guards=r2.guards, force=True)
    assert r4.status == "compressed" and r4.guards.blocked_reason is None
    assert r4.guards.ineffective_count == 0


async def test_compression_update_from_response_judges_last_compression():
    eng = ContextCompressor(FakeSummarizer(), context_length=32_000, clock=lambda: FIXED_NOW)
    r = await eng.compress(conversation(40))
    assert r.guards.verify_pending
    g = eng.update_from_response({"prompt_tokens": eng.threshold_tokens + 1}, r.guards)
    assert g.ineffective_count == 1 and not g.verify_pending
    assert eng.last_prompt_tokens == eng.threshold_tokens + 1


async def test_compression_transient_failure_sets_cooldown_and_keeps_history():
    summ = FakeSummarizer(errors=[transient("429 too many requests")])
    eng = ContextCompressor(summ, context_length=32_000, clock=lambda: FIXED_NOW)
    msgs = conversation(40)
    r = await eng.compress(msgs)
    assert r.status == "failed" and "transient" in r.reason and "unchanged" in r.reason
    assert r.messages == msgs
    assert r.guards.cooldown_until == FIXED_NOW + COOLDOWN_LADDER[0]
    assert eng.should_compress(10**9, r.guards)[1].startswith("cooldown:")
    again = await eng.compress(msgs, guards=r.guards)
    assert again.status == "skipped" and len(summ.requests) == 1
    forced = await eng.compress(msgs, guards=r.guards, force=True)
    assert forced.status == "compressed"
