"""Summarizer failures, the deterministic fallback and the feasibility skip."""

from __future__ import annotations

from agent_core.compression import (
    COMPRESSED_SUMMARY_KEY,
    CompressionGuards,
    CompressionSettings,
    ContextCompressor,
    SummarizerError,
)
from agent_core.compression.guards import PERMANENT_FAILURE_COOLDOWN
from tests.compression.compression_support import FIXED_NOW, FakeSummarizer, conversation, transient


def engine(summ, **settings):
    return ContextCompressor(
        summ, context_length=32_000, settings=CompressionSettings(**settings), clock=lambda: FIXED_NOW
    )


async def test_compression_fallback_only_when_configured():
    msgs = conversation(40, 3000)
    plain = await engine(FakeSummarizer(errors=[transient()])).compress(msgs)
    assert plain.status == "failed" and plain.messages == msgs
    r = await engine(FakeSummarizer(errors=[transient("timed out")]), deterministic_fallback=True).compress(msgs)
    assert r.status == "compressed" and r.used_fallback
    assert r.summary.startswith("[CONTEXT COMPACTION")
    assert "Dropped" in r.summary and "terminal" in r.summary and "timed out" in r.summary
    assert r.guards.fallback_streak == 1 and r.guards.cooldown_until > FIXED_NOW
    assert r.dropped_messages == r.summarized_messages > 0


async def test_compression_fallback_carries_previous_summary():
    first = await engine(FakeSummarizer(reply="## Goal\nremember the blue widget")).compress(conversation(40, 3000))
    grown = first.messages + conversation(40, 3000, system=False)
    r = await engine(FakeSummarizer(errors=[transient()]), deterministic_fallback=True).compress(grown)
    assert r.used_fallback and "remember the blue widget" in r.summary
    assert sum(1 for m in r.messages if m.get(COMPRESSED_SUMMARY_KEY)) == 1


async def test_compression_permanent_failure_never_falls_back():
    summ = FakeSummarizer(errors=[SummarizerError("permanent", "401 invalid api key")])
    msgs = conversation(40, 3000)
    r = await engine(summ, deterministic_fallback=True).compress(msgs)
    assert r.status == "failed" and "permanent" in r.reason and r.messages == msgs
    assert r.guards.cooldown_until == FIXED_NOW + PERMANENT_FAILURE_COOLDOWN
    assert len(summ.requests) == 1


async def test_compression_abort_on_summary_failure_wins_over_fallback():
    msgs = conversation(40, 3000)
    r = await engine(
        FakeSummarizer(errors=[transient()]), deterministic_fallback=True, abort_on_summary_failure=True
    ).compress(msgs)
    assert r.status == "failed" and r.messages == msgs


async def test_compression_unexpected_summarizer_error_is_transient_and_secret_free():
    r = await engine(FakeSummarizer(errors=[RuntimeError("boom sk-secretsecretsecret123")])).compress(
        conversation(40, 3000)
    )
    assert r.status == "failed" and "transient" in r.reason
    assert "secretsecret" not in r.reason and "secretsecret" not in (r.guards.cooldown_error or "")


async def test_compression_empty_or_think_only_reply_is_a_failure():
    r = await engine(FakeSummarizer(reply="<think>only thinking</think>  ")).compress(conversation(40, 3000))
    assert r.status == "failed" and "empty" in r.reason


async def test_compression_feasibility_skip_after_ineffective_record():
    summ = FakeSummarizer()
    msgs = conversation(6, 300)  # a tiny middle
    guards = CompressionGuards(ineffective_count=1)
    r = await engine(summ).compress(msgs, guards=guards)
    assert r.status == "skipped" and summ.requests == []
    assert r.guards.blocked_reason == "ineffective"
    fb = await engine(summ, deterministic_fallback=True).compress(msgs, guards=guards)
    assert fb.status == "compressed" and fb.used_fallback and summ.requests == []
    forced = await engine(summ).compress(msgs, guards=guards, force=True)
    assert forced.status == "compressed" and len(summ.requests) == 1


async def test_compression_without_summarizer():
    msgs = conversation(40, 3000)
    assert (await engine(None).compress(msgs)).status == "failed"
    assert (await engine(None, deterministic_fallback=True).compress(msgs)).used_fallback
