"""The commit fence: a job whose lease lapsed, whose deadline passed, or whose session moved on
never writes; a lease held elsewhere defers."""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.compression import CompressionPool, build_compression
from storage import Lease, StateStore
from tests.compression_pool.pool_support import (
    Events,
    make_config,
    make_session,
    summary_responder,
)
from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest


async def _unchanged(store: StateStore, sid: str, n: int) -> None:
    session = await store.get_session(sid)
    assert session is not None and session.is_live and session.end_reason is None
    assert await store.children(sid) == []
    rows = await store.load_all(sid)
    assert len(rows) == n and all(m.get("_active") and not m.get("_compacted") for m in rows)
    assert (await store.get_guard(sid)).compression_count == 0


async def test_lease_expiring_mid_summary_is_taken_over_and_nothing_is_written(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)
    taken: list[Lease] = []

    async def competitor_takes_over(_req: RecordedRequest) -> None:
        if not taken:
            # The job took its lease before it asked for the summary. Not waited for as
            # "current": the first model call of a process imports the SDK first, which on a
            # loaded host can outlast the 1 s lease by itself (CI, 2026-12-03).
            await asyncio.sleep(1.2)  # our 1 s lease has lapsed (renewal is off)
            other = await store.acquire_lease(sid, "other-host:1:job", 30)
            assert other is not None, "an expired lease can be taken over"
            taken.append(other)

    fake_openai.responder = summary_responder(0.3, before=competitor_takes_over)
    events = Events()
    hook = build_compression(make_config(fake_openai, lease_seconds=1), store,
                             on_status=events, renew_leases=False)
    try:
        # An automatic job (chat notices are sent for those; /compress reports by itself).
        out = await hook.pool.run(sid, force=True, origin="auto")
    finally:
        await hook.close()
    assert out.status == "lease_lost", out.detail
    assert taken and out.lease_token is not None and taken[0].token > out.lease_token
    await _unchanged(store, sid, 60)
    current = await store.current_lease(sid)
    assert current is not None and current.holder == "other-host:1:job", "never released theirs"
    assert events.kinds(sid)[-1] == "compaction_failed"


async def test_lease_expiring_without_a_competitor_is_refused_by_the_fence(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)
    fake_openai.responder = summary_responder(1.3)
    hook = build_compression(make_config(fake_openai, lease_seconds=1), store,
                             renew_leases=False)
    try:
        # An automatic job (chat notices are sent for those; /compress reports by itself).
        out = await hook.pool.run(sid, force=True, origin="auto")
    finally:
        await hook.close()
    assert out.status == "lease_lost", out.detail
    await _unchanged(store, sid, 60)


class _RenewalRefused:
    """The real store, except that every renewal finds the lease gone."""

    def __init__(self, store: StateStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def renew_lease(self, lease: Lease, ttl: float) -> Lease | None:
        return None


async def test_failed_renewal_abandons_the_job_before_the_summary_arrives(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)
    fake_openai.responder = summary_responder(30)
    hook = build_compression(make_config(fake_openai, lease_seconds=0.6), store)
    pool = CompressionPool(_RenewalRefused(store), hook.engine,  # type: ignore[arg-type]
                           lease_seconds=0.6, timeout_seconds=20)
    try:
        out = await pool.run(sid, force=True)
    finally:
        await pool.close()
        await hook.close()
    assert out.status == "lease_lost", out.detail
    await _unchanged(store, sid, 60)


async def test_host_timeout_discards_the_result_even_when_the_summary_arrives_later(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)
    answered = asyncio.Event()

    async def respond(req: RecordedRequest) -> Any:
        try:
            return await summary_responder(2.0)(req)
        finally:
            answered.set()

    fake_openai.responder = respond
    hook = build_compression(make_config(fake_openai, timeout_seconds=1), store)
    try:
        out = await hook.compress_now(sid)
        assert out.status == "timeout", out.detail
        await asyncio.wait_for(answered.wait(), 10)  # the summary "arrives" (or is dropped)
        await asyncio.sleep(0.3)
    finally:
        await hook.close()
    await _unchanged(store, sid, 60)
    guard = await store.get_guard(sid)
    assert guard.cooldown_until is not None, "a timeout starts the cooldown ladder"


async def test_a_session_that_ended_during_the_summary_is_superseded(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)

    async def user_resets(_req: RecordedRequest) -> None:
        await store.end_session(sid, "session_reset")

    fake_openai.responder = summary_responder(before=user_resets)
    hook = build_compression(make_config(fake_openai), store)
    try:
        out = await hook.compress_now(sid)
    finally:
        await hook.close()
    assert out.status == "superseded", out.detail
    assert await store.children(sid) == []
    assert len(await store.load_history(sid)) == 60


async def test_a_lease_held_elsewhere_defers_without_calling_the_model(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)
    other = await store.acquire_lease(sid, "other-host:2:job", 30)
    assert other is not None
    events = Events()
    hook = build_compression(make_config(fake_openai), store, on_status=events)
    try:
        out = await hook.pool.run(sid, force=True, origin="auto")
        manual = await hook.compress_now(sid)
    finally:
        await hook.close()
    assert out.status == "deferred" and manual.status == "deferred"
    assert events.kinds(sid) == ["deferred"]  # the manual one is reported by its caller
    assert fake_openai.requests == []
    await _unchanged(store, sid, 60)
    assert (await store.current_lease(sid)) == other
