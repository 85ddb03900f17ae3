"""The approvals ledger (schema v7) and the dashboard's reports, on both backends."""

from __future__ import annotations

from _storage_testlib import FakeClock

from storage import StateStore
from storage.types import ApprovalRecord

DAY = 86_400.0


def _request(rid: str, *, session_id: str | None = "s1", command: str = "rm -rf /srv",
             created_at: float = 0.0) -> ApprovalRecord:
    return ApprovalRecord(id=rid, session_id=session_id, platform="telegram", chat_id="42",
                          requester="7", tool="terminal", command=command,
                          reason="recursive delete outside the workspace",
                          created_at=created_at)


async def test_requests_and_decisions_are_kept(store: StateStore, clock: FakeClock) -> None:
    await store.record_approval(_request("a1"))
    clock.advance(5)
    await store.record_approval(_request("a2", session_id="s2"))
    clock.advance(5)
    await store.record_approval(_request("a3"))

    assert await store.decide_approval("a1", status="approved", decided_by="7")
    assert not await store.decide_approval("a1", status="denied", decided_by="8")  # decided
    assert not await store.decide_approval("nope", status="denied", decided_by="8")

    rows = await store.list_approvals()
    assert [r.id for r in rows] == ["a3", "a2", "a1"]  # newest first
    first = rows[-1]
    assert (first.status, first.decided_by, first.decided_at) == ("approved", "7", clock.now)
    assert first.created_at == clock.now - 10
    assert [r.id for r in await store.list_approvals(session_id="s1")] == ["a3", "a1"]
    assert [r.id for r in await store.list_approvals(limit=1)] == ["a3"]
    assert await store.list_approvals(session_id="none") == []


async def test_a_chats_open_requests_and_one_request_as_stored(store: StateStore,
                                                               clock: FakeClock) -> None:
    """What `/approve` on another replica reads: the chat's pending requests, oldest first,
    and the waiting replica's view of one request's decision."""
    for rid in ("b1", "b2", "b3"):
        await store.record_approval(_request(rid))
        clock.advance(1)
    await store.record_approval(ApprovalRecord(
        id="other", session_id="s9", platform="telegram", chat_id="43", requester="7",
        tool="terminal", command="x", reason="y", created_at=clock.now))
    assert await store.decide_approval("b2", status="denied", decided_by="7")
    assert [r.id for r in await store.approvals_pending_in("telegram", "42")] == ["b1", "b3"]
    assert await store.approvals_pending_in("slack", "42") == []
    got = await store.get_approval("b2")
    assert got is not None and (got.status, got.decided_by) == ("denied", "7")
    assert await store.get_approval("nope") is None


async def test_same_instant_requests_list_newest_first(store: StateStore) -> None:
    for rid in ("b1", "b2"):
        await store.record_approval(_request(rid, session_id=None, created_at=100.0))
    rows = await store.list_approvals()
    assert [r.id for r in rows] == ["b2", "b1"]
    assert all(r.session_id is None and r.status == "pending" for r in rows)


async def test_any_command_text_is_storable(store: StateStore) -> None:
    """The caller redacts; the store keeps whatever text it gets, a NUL or a lone surrogate
    included (PostgreSQL text holds neither: both become U+FFFD on both backends)."""
    await store.record_approval(_request("c1", command="printf 'a\x00b' \udc80| sh"))
    (row,) = await store.list_approvals()
    assert row.command.startswith("printf 'a\ufffdb' \ufffd") and row.command.endswith("| sh")
    assert "\x00" not in row.command


async def test_usage_is_summed_per_utc_day_of_the_start(store: StateStore,
                                                        clock: FakeClock) -> None:
    clock.now = 1_700_000_000.0 - 1_700_000_000.0 % DAY  # 2023-11-14 00:00 UTC
    start = clock.now
    a = await store.create_session(source="telegram")
    await store.add_usage(a.id, input_tokens=100, output_tokens=10)
    clock.advance(DAY - 1)  # 23:59:59 the same day
    b = await store.create_session(source="telegram")
    await store.add_usage(b.id, input_tokens=5, output_tokens=1)
    clock.advance(2)  # the next day
    c = await store.create_session(source="slack")
    await store.add_usage(c.id, input_tokens=7)
    await store.add_usage(a.id, input_tokens=1000)  # counts on a's start day

    got = await store.usage_by_day(start)
    assert [(d.day, d.input_tokens, d.output_tokens, d.sessions) for d in got] == [
        ("2023-11-14", 1105, 11, 2), ("2023-11-15", 7, 0, 1)]
    assert [d.day for d in await store.usage_by_day(start + 1)] == ["2023-11-14",
                                                                    "2023-11-15"]
    assert [d.day for d in await store.usage_by_day(start + DAY)] == ["2023-11-15"]
    assert await store.session_count() == 3
