"""Guards live in the sessions table: they survive a restart and every process agrees."""

from __future__ import annotations

import time

from gateway.compression import build_compression
from storage import StateStore
from tests.compression_pool.pool_support import (
    API_KEY,
    THRESHOLD_PROMPT,
    Events,
    make_config,
    make_session,
    summary_responder,
)
from tests.fakes.openai_server import FakeOpenAIServer, invalid_api_key, rate_limited
from tests.pg_support import Target, open_store


async def test_cooldown_after_a_429_survives_a_restart(
    store_target: Target, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.responder = summary_responder()
    fake_openai.enqueue(rate_limited())
    events = Events()
    async with await open_store(store_target) as store:
        sid = await make_session(store, 60)
        hook = build_compression(make_config(fake_openai), store, on_status=events)
        try:
            await hook.after_turn(sid, THRESHOLD_PROMPT)
            job = hook.pool.active(sid)
            assert job is not None
            out = await job
        finally:
            await hook.close()
        assert out.status == "failed"
        assert "rate_limit" in out.detail
        assert events.kinds(sid) == ["compacting", "compaction_failed"]
        assert len(await store.load_history(sid)) == 60, "history unchanged"
        assert (await store.get_session(sid)).is_live  # type: ignore[union-attr]
    requests_before = len(fake_openai.requests)

    async with await open_store(store_target) as store:  # a new process, in effect
        guard = await store.get_guard(sid)
        assert guard.cooldown_until is not None and guard.cooldown_until > time.time() + 30
        assert API_KEY not in (guard.cooldown_error or "")
        hook = build_compression(make_config(fake_openai), store)
        try:
            await hook.after_turn(sid, THRESHOLD_PROMPT)
            assert hook.pool.active(sid) is None, "the cooldown blocks automatic compression"
            blocked = await hook.compress_now(sid, force=False)
            assert blocked.status == "skipped" and "cooldown:" in blocked.detail
            assert len(fake_openai.requests) == requests_before
            forced = await hook.compress_now(sid)  # a manual compression is forced
        finally:
            await hook.close()
        assert forced.status == "compressed", forced.detail
        child_guard = await store.get_guard(forced.child_session_id or "")
        assert child_guard.cooldown_until is None, "a success clears the cooldown"


async def test_ineffective_compressions_block_until_forced_across_restart(
    store_target: Target, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.responder = summary_responder()
    async with await open_store(store_target) as store:
        sid = await make_session(store, 60)
        hook = build_compression(make_config(fake_openai), store)
        try:
            first = await hook.compress_now(sid)
            assert first.status == "compressed", first.detail
            child = first.child_session_id or ""
            # every next real prompt is still above the threshold: each compression is judged
            # ineffective (a no-op counts too); after two strikes nothing more is queued
            for _ in range(4):
                await hook.after_turn(child, THRESHOLD_PROMPT)
                job = hook.pool.active(child)
                if job is None:
                    break
                out = await job
                child = out.continue_in or child
            else:
                raise AssertionError("automatic compression never stopped")
        finally:
            await hook.close()
        guard = await store.get_guard(child)
        assert guard.ineffective_count == 2
        assert guard.last_prompt_tokens == THRESHOLD_PROMPT

    async with await open_store(store_target) as store:
        hook = build_compression(make_config(fake_openai), store)
        try:
            await hook.after_turn(child, THRESHOLD_PROMPT)
            assert hook.pool.active(child) is None, "still blocked after a restart"
            auto = await hook.compress_now(child, force=False)
            assert auto.status == "skipped" and "ineffective" in auto.detail
            forced = await hook.compress_now(child, force=True)
            assert forced.status != "skipped"
        finally:
            await hook.close()
        assert (await store.get_guard(child)).ineffective_count <= 1, "forcing resets the streak"


async def test_permanent_summarizer_failure_is_not_retried_and_leaks_no_key(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)
    fake_openai.enqueue(invalid_api_key())
    fake_openai.responder = summary_responder()
    hook = build_compression(make_config(fake_openai), store)
    try:
        out = await hook.compress_now(sid)
    finally:
        await hook.close()
    assert out.status == "failed"
    assert "401" in out.detail and API_KEY not in out.detail
    assert len(fake_openai.requests) == 1, "a permanent failure is not retried"
    guard = await store.get_guard(sid)
    assert guard.cooldown_until is not None and guard.cooldown_until > time.time() + 3000
    assert len(await store.load_history(sid)) == 60
    assert await store.children(sid) == []


async def test_the_cooldown_ladder_grows_across_processes(
    store_target: Target, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.responder = lambda _req: rate_limited()
    async with await open_store(store_target) as store:
        sid = await make_session(store, 60)
        hook = build_compression(make_config(fake_openai), store)
        try:
            await hook.after_turn(sid, THRESHOLD_PROMPT)
            assert (await hook.pool.active(sid)).status == "failed"  # type: ignore[union-attr]
        finally:
            await hook.close()
        first = (await store.get_guard(sid)).cooldown_until or 0.0
        assert 0 < first - time.time() <= 60

    async with await open_store(store_target) as store:
        later = time.time() + 120  # another process, after the first cooldown ran out
        hook = build_compression(make_config(fake_openai), store, clock=lambda: later)
        try:
            await hook.after_turn(sid, THRESHOLD_PROMPT)
            job = hook.pool.active(sid)
            assert job is not None, "the expired cooldown no longer blocks"
            assert (await job).status == "failed"
        finally:
            await hook.close()
        second = (await store.get_guard(sid)).cooldown_until or 0.0
        assert second - later > 60, "the second consecutive failure rests longer"
