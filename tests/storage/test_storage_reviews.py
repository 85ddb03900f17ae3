"""The self-review ledger (schema v8), on both backends: a review's writes and tokens are
kept as given, listed newest first, and summed for the daily token cap."""

from __future__ import annotations

from _storage_testlib import FakeClock

from storage import StateStore
from storage.types import ReviewRecord


def _review(rid: str, *, session_id: str | None = "s1", status: str = "done",
            tokens: tuple[int, int] = (100, 20), finished_at: float = 0.0,
            **kw: object) -> ReviewRecord:
    return ReviewRecord(id=rid, session_id=session_id, principal="telegram:7",
                        trigger="tool_calls", status=status, input_tokens=tokens[0],
                        output_tokens=tokens[1], model_calls=2, model="aux-model",
                        finished_at=finished_at, **kw)  # type: ignore[arg-type]


async def test_a_review_is_kept_with_what_it_wrote_and_its_tokens(
        store: StateStore, clock: FakeClock) -> None:
    await store.record_review(_review(
        "r1", skills=({"action": "create", "name": "deploy-k8s"},),
        memories=({"action": "add", "target": "user", "entry": "prefers short answers ☕"},),
        requested_at=clock.now - 3))
    (row,) = await store.list_reviews()
    assert row.id == "r1" and row.session_id == "s1" and row.principal == "telegram:7"
    assert (row.trigger, row.status, row.reason, row.model) == ("tool_calls", "done", None,
                                                                "aux-model")
    assert row.skills == ({"action": "create", "name": "deploy-k8s"},)
    assert row.memories == ({"action": "add", "target": "user",
                             "entry": "prefers short answers ☕"},)
    assert (row.input_tokens, row.output_tokens, row.tokens, row.model_calls) == (100, 20,
                                                                                  120, 2)
    assert (row.requested_at, row.finished_at) == (clock.now - 3, clock.now)


async def test_reviews_list_newest_first_and_by_session(store: StateStore,
                                                        clock: FakeClock) -> None:
    await store.record_review(_review("a"))
    clock.advance(5)
    await store.record_review(_review("b", session_id="s2", status="skipped",
                                      reason="busy", tokens=(0, 0)))
    clock.advance(5)
    await store.record_review(_review("c"))
    assert [r.id for r in await store.list_reviews()] == ["c", "b", "a"]
    assert [r.id for r in await store.list_reviews(session_id="s1")] == ["c", "a"]
    assert [r.id for r in await store.list_reviews(limit=1)] == ["c"]
    skipped = (await store.list_reviews(session_id="s2"))[0]
    assert (skipped.status, skipped.reason, skipped.skills, skipped.tokens) == (
        "skipped", "busy", (), 0)


async def test_tokens_since_sum_the_reviews_that_ended_since(store: StateStore,
                                                             clock: FakeClock) -> None:
    start = clock.now
    assert await store.review_tokens_since(start) == 0
    await store.record_review(_review("a", tokens=(1000, 200)))
    clock.advance(10)
    await store.record_review(_review("b", tokens=(30, 7)))
    assert await store.review_tokens_since(start) == 1237
    assert await store.review_tokens_since(start + 1) == 37
    assert await store.review_tokens_since(clock.now + 1) == 0


async def test_any_entry_text_is_storable(store: StateStore) -> None:
    await store.record_review(_review("n", memories=(
        {"action": "add", "target": "memory", "entry": "a\x00b \udc80"},)))
    (row,) = await store.list_reviews()
    assert row.memories[0]["entry"].startswith("a\ufffdb \ufffd")
    assert "\x00" not in row.memories[0]["entry"]
