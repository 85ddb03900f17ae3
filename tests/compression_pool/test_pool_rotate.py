"""A compression job end to end: rotation and in-place commits, status events, joining."""

from __future__ import annotations

from gateway.compression import build_compression
from gateway.metrics import GatewayMetrics
from storage import StateStore
from tests.compression_pool.pool_support import (
    API_KEY,
    THRESHOLD_PROMPT,
    Events,
    make_config,
    make_session,
    summary_responder,
)
from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest


async def test_rotation_creates_child_and_carries_messages_appended_during_summary(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)
    late = [{"role": "user", "content": "late question about okapis"},
            {"role": "assistant", "content": "late answer about okapis"}]

    async def append_during_summary(_req: RecordedRequest) -> None:
        if len(fake_openai.requests) == 1:
            await store.append_messages(sid, late)

    fake_openai.responder = summary_responder(0.2, before=append_during_summary)
    events = Events()
    hook = build_compression(make_config(fake_openai), store, on_status=events)
    try:
        await hook.after_turn(sid, THRESHOLD_PROMPT)
        job = hook.pool.active(sid)
        assert job is not None, "a prompt above the threshold queues a job"
        out = await job
    finally:
        await hook.close()

    assert out.status == "compressed", out.detail
    parent = await store.get_session(sid)
    assert parent is not None and parent.end_reason == "compression" and not parent.is_live
    child = await store.get_session(out.child_session_id or "")
    assert child is not None and child.is_live
    assert child.parent_session_id == sid
    assert child.title == "Title #2"
    assert child.system_prompt and child.system_prompt.startswith("You are helpful.")
    history = await store.load_history(child.id)
    summaries = [m for m in history if m.get("_compressed_summary")]
    assert len(summaries) == 1
    assert summaries[0]["content"].startswith("[CONTEXT COMPACTION")
    assert "zebra report" in summaries[0]["content"]
    assert [m["content"] for m in history[-2:]] == [m["content"] for m in late]
    assert len(history) < 62
    # the parent's history is never deleted
    assert len(await store.load_history(sid)) == 62
    assert len(fake_openai.requests) >= 1
    # the summarizer calls went to the auxiliary model through the SDK, without streaming
    req = fake_openai.requests[0]
    assert req.body["model"] == "summary-model"
    assert req.api_key == API_KEY
    assert not req.stream
    assert events.kinds(sid) == ["compacting", "compacted"]
    assert (await store.current_lease(sid)) is None, "the lease is released"


async def test_in_place_keeps_the_id_and_archived_rows_stay_searchable(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)
    fake_openai.responder = summary_responder()
    hook = build_compression(make_config(fake_openai, mode="in_place"), store)
    try:
        out = await hook.compress_now(sid)
    finally:
        await hook.close()

    assert out.status == "compressed", out.detail
    assert out.child_session_id is None and out.continue_in == sid
    session = await store.get_session(sid)
    assert session is not None and session.is_live
    rows = await store.load_all(sid)
    archived = [m for m in rows if m.get("_compacted")]
    assert len(archived) == 60 and not any(m.get("_active") for m in archived)
    history = await store.load_history(sid)
    assert sum(1 for m in history if m.get("_compressed_summary")) == 1
    assert len(history) < 60
    hits = await store.search("zebra7")
    assert any(h.session_id == sid for h in hits), "compacted rows remain searchable"
    assert (await store.get_guard(sid)).compression_count == 1


async def test_a_second_request_joins_the_queued_job(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)
    fake_openai.responder = summary_responder(0.3)
    metrics = GatewayMetrics()
    hook = build_compression(make_config(fake_openai), store, metrics=metrics)
    try:
        first = hook.pool.submit(sid)
        second = hook.pool.submit(sid, force=True)
        assert first is second
        assert not await hook.wait_idle(sid, 0.01)
        snap = hook.status()
        assert snap["queued"] + len(snap["running"]) == 1
        out = await first
        assert await hook.wait_idle(sid, 0.01)
        assert hook.status()["outcomes"] == {"compressed": 1}
    finally:
        await hook.close()
    assert out.status == "compressed"
    assert len(await store.children(sid)) == 1, "one job, one child"
    assert 'hermes_compressions_total{status="compressed"} 1.0' in metrics.render().decode()
