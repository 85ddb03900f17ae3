"""Claims of held events, dedup records and outbox finals (schema v6), on both backends.

A boot (one process lifetime) claims what its live path takes; start-up recovery of a later
boot claims only what no session of its own took, in one transaction, so an event or a final
reply is never taken by both paths (the restart race of issue 15).
"""

from __future__ import annotations

from _storage_testlib import FakeClock

from storage import StateStore


async def test_a_held_event_is_taken_once_per_boot(store: StateStore) -> None:
    assert await store.inbound_hold("telegram", "1", "k", "first", claimed_by="boot-a")
    # the same boot holding it again changes nothing: its session has it
    assert not await store.inbound_hold("telegram", "1", "k", "again", claimed_by="boot-a")
    assert [h.payload for h in await store.inbound_held()] == ["first"]
    # an unclaimed hold (no boot named) always replaces the payload, keeping its place
    assert await store.inbound_hold("telegram", "1", "k", "plain")
    assert [h.payload for h in await store.inbound_held()] == ["plain"]


async def test_recovery_claims_what_its_own_boot_has_not_taken(store: StateStore,
                                                               clock: FakeClock) -> None:
    await store.inbound_hold("telegram", "1", "k1", "old one", claimed_by="boot-a")
    clock.advance(1)
    await store.inbound_hold("telegram", "2", "k2", "nobody's")
    clock.advance(1)
    await store.inbound_hold("telegram", "3", "k3", "live of b", claimed_by="boot-b")
    clock.advance(1)
    await store.inbound_hold("telegram", "4", "k1", "older boot", claimed_by="boot-a")

    got = await store.inbound_claim_held("boot-b")
    assert [(h.event_id, h.payload) for h in got] == [
        ("1", "old one"), ("2", "nobody's"), ("4", "older boot")]  # in the order accepted
    assert await store.inbound_claim_held("boot-b") == []  # a second call finds none
    # boot b's live path now finds them taken by its own boot
    assert not await store.inbound_hold("telegram", "2", "k2", "dup", claimed_by="boot-b")
    # releasing clears hold and claim: the event is a plain dedup record again
    await store.inbound_release([("telegram", "1")])
    assert await store.inbound_held_count() == 3
    assert not await store.record_if_new("telegram", "1")


async def test_a_record_cut_off_before_its_hold_counts_as_new_for_another_boot(
        store: StateStore) -> None:
    assert await store.record_if_new("slack", "e1", claimed_by="boot-a")
    assert not await store.record_if_new("slack", "e1", claimed_by="boot-a")  # a repeat
    assert not await store.record_if_new("slack", "e1")  # without a boot: a repeat
    # boot a died between record and hold; boot b gets the redelivery as new, once
    assert await store.record_if_new("slack", "e1", claimed_by="boot-b")
    assert not await store.record_if_new("slack", "e1", claimed_by="boot-b")
    # a held record is never new again
    assert await store.record_if_new("slack", "e2", claimed_by="boot-a")
    await store.inbound_hold("slack", "e2", "k", "payload", claimed_by="boot-a")
    assert not await store.record_if_new("slack", "e2", claimed_by="boot-b")


async def test_record_and_hold_records_and_holds_a_new_event_in_one_write(
        store: StateStore, clock: FakeClock) -> None:
    await store.inbound_hold("telegram", "0", "k", "earlier", claimed_by="boot-a")
    clock.advance(1)
    assert await store.record_and_hold("telegram", "1", "k", "first", claimed_by="boot-a")
    held = await store.inbound_held()
    assert [(h.event_id, h.session_key, h.payload) for h in held] == [
        ("0", "k", "earlier"), ("1", "k", "first")]  # at the end of the line
    # a repeat: nothing changes (not re-held, its payload kept), for this boot or another
    assert not await store.record_and_hold("telegram", "1", "k", "again", claimed_by="boot-a")
    assert not await store.record_and_hold("telegram", "1", "k", "again", claimed_by="boot-b")
    assert not await store.record_if_new("telegram", "1", claimed_by="boot-b")
    assert [h.payload for h in await store.inbound_held()] == ["earlier", "first"]
    # start-up recovery of this boot does not take it (its session has it); a later boot's does
    assert await store.inbound_claim_held("boot-a") == []
    # released with its message: a plain dedup record, a repeat from then on
    await store.inbound_release([("telegram", "1")])
    assert not await store.record_and_hold("telegram", "1", "k", "late", claimed_by="boot-a")
    assert [h.event_id for h in await store.inbound_held()] == ["0"]


async def test_record_and_hold_takes_back_its_own_boots_event_when_its_attempt_failed(
        store: StateStore) -> None:
    """The commit stored record and hold but its reply was lost: this boot's retry
    (`reclaim_own`) takes it as new; any other delivery is a repeat."""
    assert await store.record_and_hold("slack", "e1", "k", "p", claimed_by="boot-a")
    assert not await store.record_and_hold("slack", "e1", "k", "p", claimed_by="boot-a")
    assert await store.record_and_hold("slack", "e1", "k", "p", claimed_by="boot-a",
                                       reclaim_own=True)
    assert not await store.record_and_hold("slack", "e1", "k", "p", claimed_by="boot-b",
                                           reclaim_own=True)  # not its own claim
    assert [h.event_id for h in await store.inbound_held()] == ["e1"]  # held once
    # a record cut off before its hold (a dead boot's claim) is taken and held now
    assert await store.record_if_new("slack", "e2", claimed_by="boot-a")
    assert await store.record_and_hold("slack", "e2", "k", "q", claimed_by="boot-b")
    assert [(h.event_id, h.payload) for h in await store.inbound_held()] == [
        ("e1", "p"), ("e2", "q")]
    assert await store.inbound_claim_held("boot-b") == [
        h for h in await store.inbound_held() if h.event_id == "e1"]


async def test_a_settled_record_stays_a_repeat_for_the_next_boot(store: StateStore) -> None:
    assert await store.record_if_new("discord", "c1", claimed_by="boot-a")
    assert await store.record_if_new("discord", "c2", claimed_by="boot-a")
    await store.inbound_settle([("discord", "c1")])
    await store.inbound_settle([])
    assert not await store.record_if_new("discord", "c1", claimed_by="boot-b")
    assert await store.record_if_new("discord", "c2", claimed_by="boot-b")


async def test_recovery_resends_only_finals_of_earlier_boots(store: StateStore,
                                                             clock: FakeClock) -> None:
    old = await store.outbox_add(platform="telegram", chat_id="1", text="old",
                                 claimed_by="boot-a")
    clock.advance(1)
    unclaimed = await store.outbox_add(platform="telegram", chat_id="1", text="plain")
    clock.advance(1)
    live = await store.outbox_add(platform="telegram", chat_id="1", text="live",
                                  claimed_by="boot-b")
    done = await store.outbox_add(platform="telegram", chat_id="1", text="done",
                                  claimed_by="boot-a")
    await store.outbox_mark_delivered([done])
    assert len({old, unclaimed, live, done}) == 4 and min(old, unclaimed, live, done) > 0

    got = await store.outbox_claim_undelivered("boot-b")
    assert [(o.id, o.text) for o in got] == [(old, "old"), (unclaimed, "plain")]
    assert await store.outbox_claim_undelivered("boot-b") == []
    assert [o.text for o in await store.outbox_claim_undelivered("boot-c")] == [
        "old", "plain", "live"]
