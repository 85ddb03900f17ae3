"""Storage that cannot record an inbound event (disk full) must not cost the message. Found
by the chaos suite (seed 1515, disk full): the router logged the failure and returned, so
Slack got its ack, Telegram its offset and Discord its cursor, and the message was gone."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from gateway.events import MessageEvent, UserRef
from tests.gateway.runtime_harness import runner_for

#: The two ways an event is recorded: a plain message of an allow-listed user is recorded
#: and held for its session in one write (`record_and_hold`); any other event (here: a user
#: let in by pairing, which needs a lookup) is recorded first (`record_if_new`) and held by
#: the session lane after the policy steps.
LANES = {"held": ("u1", "record_and_hold"), "stepwise": ("u9", "record_if_new")}


async def _user_of(lane: str, store) -> UserRef:  # type: ignore[no-untyped-def]
    user_id, _ = LANES[lane]
    if lane == "stepwise":
        code = await store.create_pairing_code("fake", user_id, display="paired")
        assert await store.approve_pairing_code("fake", code) is not None
    return UserRef(id=user_id)


@pytest.mark.parametrize("lane", LANES)
async def test_event_storage_could_not_record_is_refused_and_redelivery_answered(
        tmp_path, model, lane):
    async with runner_for(tmp_path, model) as (runner, fake):
        store = runner.store
        method = LANES[lane][1]
        real = getattr(store, method)
        failures = [sqlite3.OperationalError("database or disk is full")]

        async def full_disk(platform: str, event_id: str, *a: object, **kw: object) -> bool:
            if failures:
                raise failures.pop()
            return await real(platform, event_id, *a, **kw)  # type: ignore[arg-type,no-any-return]

        setattr(store, method, full_disk)
        event = MessageEvent(platform="fake", event_id="e-full", chat_id="c1",
                             user=await _user_of(lane, store), text="are you there")
        with pytest.raises(sqlite3.OperationalError):
            await runner.parts.inbound.emit(event)  # the adapter must not acknowledge it
        assert not failures  # the lane under test took it
        assert await runner.parts.inbound.emit(event) is True  # the platform's redelivery
        await fake.wait_for(lambda: fake.messages("c1") == ["echo: are you there"], 10)


@pytest.mark.parametrize("lane", LANES)
async def test_a_record_whose_commit_reply_was_lost_is_answered_on_redelivery(
        tmp_path, model, lane):
    """Found by the chaos suite's replica mode (seed 2021, the database cut off): the
    commit of the dedup record reached PostgreSQL but its reply was lost with the
    connection, so the router refused the event (no ack) while the record was stored; Slack
    sent it again, the ledger called that a repeat, acked and dropped it: never answered."""
    from storage import StorageBusyError

    async with runner_for(tmp_path, model) as (runner, fake):
        store = runner.store
        method = LANES[lane][1]
        real = getattr(store, method)
        lost = [StorageBusyError("database connection lost while committing")]

        async def commit_reply_lost(platform: str, event_id: str, *a: object,
                                    **kw: object) -> bool:
            stored: bool = await real(platform, event_id, *a, **kw)
            if lost:
                raise lost.pop()
            return stored

        setattr(store, method, commit_reply_lost)
        event = MessageEvent(platform="fake", event_id="e-lost", chat_id="c1",
                             user=await _user_of(lane, store), text="still there")
        with pytest.raises(StorageBusyError):
            await runner.parts.inbound.emit(event)  # refused: the platform sends it again
        assert await runner.parts.inbound.emit(event) is True
        await fake.wait_for(lambda: fake.messages("c1") == ["echo: still there"], 10)
        assert await runner.parts.inbound.emit(event) is False  # now a repeat
        [session] = await store.list_sessions()
        texts = [m["content"] for m in await store.load_history(session.id)]
        assert texts == ["still there", "echo: still there"]


@pytest.mark.parametrize("lane", LANES)
async def test_two_redeliveries_at_once_after_a_lost_commit_reply_make_one_turn(
        tmp_path, model, lane):
    """Only one of two redeliveries arriving together reclaims the record of a failed
    attempt; the other is a repeat."""
    from storage import StorageBusyError

    async with runner_for(tmp_path, model) as (runner, fake):
        store = runner.store
        method = LANES[lane][1]
        real = getattr(store, method)
        lost = [StorageBusyError("database connection lost while committing")]

        async def commit_reply_lost(platform: str, event_id: str, *a: object,
                                    **kw: object) -> bool:
            stored: bool = await real(platform, event_id, *a, **kw)
            if lost:
                raise lost.pop()
            return stored

        setattr(store, method, commit_reply_lost)
        event = MessageEvent(platform="fake", event_id="e-twice", chat_id="c1",
                             user=await _user_of(lane, store), text="once please")
        with pytest.raises(StorageBusyError):
            await runner.parts.inbound.emit(event)
        got = await asyncio.gather(runner.parts.inbound.emit(event),
                                   runner.parts.inbound.emit(event))
        assert sorted(got) == [False, True]
        await fake.wait_for(lambda: fake.messages("c1") == ["echo: once please"], 10)
        await asyncio.sleep(0.3)
        assert fake.messages("c1") == ["echo: once please"]


async def test_an_event_recorded_but_not_held_is_refused_and_its_redelivery_answered_once(
        tmp_path, model):
    """Found by the chaos suite (seed 1515 in CI, a SIGTERM during start-up): the dedup
    record was written, then the store closed under the stop and the hold failed; the event
    was queued in memory only, Slack got its ack, and the stop dropped it: never answered,
    never stored. An event that cannot be held is now refused like one not recorded, and
    the platform's redelivery reclaims its record."""
    from gateway.sessions.inbox import EventNotHeldError

    async with runner_for(tmp_path, model) as (runner, fake):
        store = runner.store
        real = store.inbound_hold
        failures = [sqlite3.OperationalError("database or disk is full")]

        async def hold_fails(*args: object, **kw: object) -> bool:
            if failures:
                raise failures.pop()
            return await real(*args, **kw)  # type: ignore[arg-type]

        store.inbound_hold = hold_fails  # type: ignore[method-assign]
        event = MessageEvent(platform="fake", event_id="e-unheld", chat_id="c1",
                             user=await _user_of("stepwise", store), text="hold me")
        with pytest.raises(EventNotHeldError):
            await runner.parts.inbound.emit(event)  # the adapter must not acknowledge it
        await asyncio.sleep(0.3)
        assert fake.messages("c1") == []  # nothing answered from memory
        assert await runner.parts.inbound.emit(event) is True  # the platform's redelivery
        await fake.wait_for(lambda: fake.messages("c1") == ["echo: hold me"], 10)
        assert await runner.parts.inbound.emit(event) is False  # now a repeat
        await asyncio.sleep(0.3)
        assert fake.messages("c1") == ["echo: hold me"]
        [session] = await store.list_sessions()
        texts = [m["content"] for m in await store.load_history(session.id)]
        assert texts == ["hold me", "echo: hold me"]


async def test_an_event_not_held_before_a_stop_is_taken_in_by_the_next_start(
        tmp_path, model):
    """The same event refused while this process stops (its hold failed after its record):
    the next process, a new boot, takes the redelivery in as new."""
    from gateway.sessions.inbox import EventNotHeldError

    async with runner_for(tmp_path, model) as (runner, _fake):
        store = runner.store

        async def store_closing(*_a: object, **_k: object) -> bool:
            from storage import StoreClosedError
            raise StoreClosedError("the store is closed")

        store.inbound_hold = store_closing  # type: ignore[method-assign]
        event = MessageEvent(platform="fake", event_id="e-stop", chat_id="c1",
                             user=await _user_of("stepwise", store), text="after the restart")
        with pytest.raises(EventNotHeldError):
            await runner.parts.inbound.emit(event)
    async with runner_for(tmp_path, model) as (runner, fake):
        assert await runner.parts.inbound.emit(event) is True
        await fake.wait_for(lambda: fake.messages("c1") == ["echo: after the restart"], 10)


async def test_a_bad_event_is_still_dropped_without_raising(tmp_path, model):
    async with runner_for(tmp_path, model) as (runner, _fake):
        async def broken(*_a: object, **_k: object) -> None:
            raise ValueError("unparseable")

        pipeline = runner.parts.inbound._pipeline
        pipeline._steps = (broken, *pipeline._steps)
        event = MessageEvent(platform="fake", event_id="e-bad", chat_id="c1",
                             user=UserRef(id="u1"), text="?")
        assert await runner.parts.inbound.emit(event) is False


async def test_a_delivered_reply_whose_record_failed_once_is_not_sent_again(tmp_path, model):
    """Found by the chaos suite (seed 1515, disk full): the reply went out, marking it
    delivered failed, the turn crashed with a failure notice under the answer, and after the
    restart the open outbox row sent the answer a second time."""
    async with runner_for(tmp_path, model) as (runner, fake):
        store = runner.store
        real = store.outbox_mark_delivered
        failures = [sqlite3.OperationalError("database or disk is full")]

        async def full_disk(*args: object, **kw: object) -> object:
            if failures:
                raise failures.pop()
            return await real(*args, **kw)  # type: ignore[arg-type]

        store.outbox_mark_delivered = full_disk  # type: ignore[method-assign]
        await fake.inject("hello", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: "echo: hello" in fake.messages("c1"), 10)
        await fake.wait_for(lambda: not runner.manager.is_busy("fake:dm:c1"), 10)
        assert not failures
        assert fake.messages("c1") == ["echo: hello"]  # no failure notice under the answer
        open_rows = await store.outbox_undelivered()
        assert open_rows == []  # nothing left to send again after a restart


async def test_a_reply_never_overtakes_an_earlier_one_waiting_for_a_rate_limit(
        tmp_path, model):
    """Found by the chaos suite (seed 1515): the first answer's send hit a rate limit and was
    retried two seconds later; meanwhile the next message's answer went out, so the chat
    showed the answers in the wrong order."""
    async with runner_for(tmp_path, model, gateway__busy_mode="queue",
                          gateway__burst_merge_s=0,
                          gateway__streaming__enabled=False) as (runner, fake):
        fake.fail_next("rate_limited", retry_after=1.5, op="send")
        await _first_then_second(fake, model, timeout_s=15)
        assert _echoes(fake) == ["echo: first", "echo: second"]


async def test_a_reply_waits_behind_an_earlier_one_whose_retry_met_a_storage_error(
        tmp_path, model):
    """Found by the chaos suite's replica mode (seed 2021, the database cut off): the
    rate-limited first answer's retry could not read its outbox row and ended, so nothing
    held the next answer back and the chat showed them in the wrong order."""
    async with runner_for(tmp_path, model, gateway__busy_mode="queue",
                          gateway__burst_merge_s=0,
                          gateway__streaming__enabled=False) as (runner, fake):
        store = runner.store
        real = store.outbox_get
        cut = [ConnectionResetError(104, "Connection reset by peer")]

        async def database_cut(*args: object, **kw: object) -> object:
            if cut:
                raise cut.pop()
            return await real(*args, **kw)  # type: ignore[arg-type]

        store.outbox_get = database_cut  # type: ignore[method-assign]
        fake.fail_next("rate_limited", retry_after=0.5, op="send")
        await _first_then_second(fake, model, timeout_s=20)
        assert not cut
        assert _echoes(fake) == ["echo: first", "echo: second"]


async def _first_then_second(fake, model, *, timeout_s: float) -> None:
    """"first", then (once the model has it) "second" in one chat, until both are answered."""
    await fake.inject("first", chat_id="c1", user_id="u1")
    await fake.wait_for(lambda: len(model.requests) == 1, 10)
    await fake.inject("second", chat_id="c1", user_id="u1")
    await fake.wait_for(lambda: {"echo: first", "echo: second"} <= set(fake.messages("c1")),
                        timeout_s)


def _echoes(fake) -> list[str]:
    return [m for m in fake.messages("c1") if m.startswith("echo")]


@pytest.mark.parametrize("lane", LANES)
async def test_one_event_delivered_twice_at_once_makes_one_turn(tmp_path, model, lane):
    """Two paths, one event: a webhook retry racing the original (or a re-poll) on either
    lane; one is new, the other a repeat, and the chat gets one answer."""
    async with runner_for(tmp_path, model) as (runner, fake):
        event = MessageEvent(platform="fake", event_id="e-race", chat_id="c1",
                             user=await _user_of(lane, runner.store), text="only once")
        got = await asyncio.gather(runner.parts.inbound.emit(event),
                                   runner.parts.inbound.emit(event))
        assert sorted(got) == [False, True]
        await fake.wait_for(lambda: fake.messages("c1") == ["echo: only once"], 10)
        await asyncio.sleep(0.3)
        assert fake.messages("c1") == ["echo: only once"]
        assert await runner.store.inbound_held_count() == 0


async def test_a_failed_attempt_does_not_take_back_what_recovery_of_this_boot_took(
        tmp_path, model):
    """Two paths, one event: start-up recovery claimed an event an earlier process held
    (and queues it), then the platform's redelivery of it failed once to be recorded. The
    next redelivery takes back only an event this boot's live path held; this one is
    recovery's, and a repeat (it would otherwise be queued, and answered, twice)."""
    from gateway.sessions.inbox import payload_of
    from storage import StorageBusyError

    async with runner_for(tmp_path, model) as (runner, fake):
        store = runner.store
        event = MessageEvent(platform="fake", event_id="e-recovered", chat_id="c1",
                             user=UserRef(id="u1"), text="from before the restart")
        assert await store.inbound_hold("fake", "e-recovered", "fake:dm:c1",
                                        payload_of(event), claimed_by="a-dead-boot")
        [(_, claimed, _)] = await runner.parts.inbox.claim_held()  # recovery's own claim
        assert claimed.event_id == "e-recovered"
        real = store.record_and_hold
        failures = [StorageBusyError("database connection lost while committing")]

        async def fails_once(*a: object, **kw: object) -> bool:
            if failures:
                raise failures.pop()
            return await real(*a, **kw)  # type: ignore[arg-type,no-any-return]

        store.record_and_hold = fails_once  # type: ignore[method-assign]
        with pytest.raises(StorageBusyError):
            await runner.parts.inbound.emit(event)
        assert await runner.parts.inbound.emit(event) is False  # recovery has it
        await asyncio.sleep(0.5)
        assert fake.messages("c1") == []  # not queued by the live path a second time
        assert [h.event_id for h in await store.inbound_held()] == ["e-recovered"]
