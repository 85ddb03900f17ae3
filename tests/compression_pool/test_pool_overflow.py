"""The turn layer's hook: overflow recovery and waiting for a running compression."""

from __future__ import annotations

import asyncio

from gateway.compression import build_compression
from storage import StateStore
from tests.compression_pool.pool_support import (
    THRESHOLD_PROMPT,
    make_config,
    make_session,
    summary_responder,
    wait_for,
)
from tests.fakes.openai_server import FakeOpenAIServer


async def test_overflow_compression_returns_the_session_to_continue_in(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)
    fake_openai.responder = summary_responder()
    rotate = build_compression(make_config(fake_openai), store)
    try:
        child = await rotate.compress_for_overflow(sid)
    finally:
        await rotate.close()
    assert child is not None and child != sid
    assert child == await store.tip(sid)

    other = await make_session(store, 60, title="Other")
    in_place = build_compression(make_config(fake_openai, mode="in_place"), store)
    try:
        same = await in_place.compress_for_overflow(other)
    finally:
        await in_place.close()
    assert same == other
    assert (await store.get_guard(other)).compression_count == 1


async def test_overflow_follows_a_compression_running_in_another_process(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)
    gate = asyncio.Event()
    fake_openai.responder = summary_responder(gate=gate)
    elsewhere = build_compression(make_config(fake_openai), store)  # stands for another process
    here = build_compression(make_config(fake_openai), store)
    try:
        theirs = asyncio.create_task(elsewhere.compress_now(sid))
        await wait_for(lambda: store.current_lease(sid))
        ours = asyncio.create_task(here.compress_for_overflow(sid))
        await asyncio.sleep(0.3)
        assert not ours.done(), "it waits for the other holder instead of failing"
        gate.set()
        other_out = await theirs
        assert await asyncio.wait_for(ours, 10) == other_out.child_session_id
    finally:
        gate.set()
        await here.close()
        await elsewhere.close()
    assert len(await store.children(sid)) == 1


async def test_a_turn_waits_a_bounded_time_for_a_running_job(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)
    gate = asyncio.Event()
    fake_openai.responder = summary_responder(gate=gate)
    hook = build_compression(make_config(fake_openai), store)
    try:
        await hook.after_turn(sid, THRESHOLD_PROMPT)
        assert await hook.wait_idle(sid, 0.2) is False, "gives up after the bound"
        gate.set()
        assert await hook.wait_idle(sid, 10) is True
        assert await hook.wait_idle("unrelated", 0) is True
    finally:
        gate.set()
        await hook.close()


async def test_disabled_compression_queues_nothing(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)
    hook = build_compression(make_config(fake_openai, enabled=False), store)
    try:
        await hook.after_turn(sid, THRESHOLD_PROMPT)
        assert hook.pool.active(sid) is None
        assert await hook.compress_for_overflow(sid) is None
    finally:
        await hook.close()
    assert fake_openai.requests == []


async def test_close_cancels_a_running_job_and_releases_its_lease(
    store: StateStore, fake_openai: FakeOpenAIServer
) -> None:
    sid = await make_session(store, 60)
    fake_openai.responder = summary_responder(30)
    hook = build_compression(make_config(fake_openai), store)
    fut = hook.pool.submit(sid, force=True)
    await wait_for(lambda: fake_openai.requests)
    await hook.close()
    out = await fut
    assert out.status == "cancelled"
    assert await store.current_lease(sid) is None
    assert await store.children(sid) == []
