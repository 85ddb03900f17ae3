"""Per-chat outbound rate budgets driven by a manual clock (no real sleeping), with the rate
profiles the adapters declare."""

from __future__ import annotations

import asyncio

import pytest

from adapters.discord.adapter import RATE_PROFILE as DISCORD
from adapters.telegram.adapter import RATE_PROFILE as TELEGRAM
from gateway.ratelimit import (
    BudgetClosed,
    BudgetSpec,
    ChatRateBudget,
    Deferred,
    Kind,
    ManualClock,
    RateBudgets,
    RateProfile,
    RateWindow,
)

SLACK = RateProfile()  # what the Slack adapter declares: one message a second per channel


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=1_000.0)


@pytest.fixture
def budgets(clock: ManualClock) -> RateBudgets:
    return RateBudgets(clock=clock, idle_ttl_s=300.0, max_wait_s=10.0)


async def test_retry_after_slows_that_chat_and_not_others(
    budgets: RateBudgets, clock: ManualClock
) -> None:
    budgets.throttle(TELEGRAM, "A", retry_after=30.0)
    a = budgets.for_chat(TELEGRAM, "A")
    b = budgets.for_chat(TELEGRAM, "B")
    with pytest.raises(Deferred) as info:
        await a.acquire(Kind.FINAL, max_wait=5.0)
    assert info.value.until == pytest.approx(1_030.0)
    assert clock.now() == 1_000.0
    await b.acquire(Kind.FINAL)
    assert b.try_acquire(Kind.TYPING) is False
    await clock.advance(1.0)
    assert b.try_acquire(Kind.SEND)
    assert a.try_acquire(Kind.SEND) is False


async def test_final_waits_out_a_short_throttle(budgets: RateBudgets, clock: ManualClock) -> None:
    chat = budgets.for_chat(TELEGRAM, "42")
    chat.throttle(3.0)
    task = asyncio.create_task(chat.acquire("final"))
    await clock.advance(2.0)
    assert not task.done()
    await clock.advance(1.5)
    assert task.done() and task.exception() is None


async def test_newest_hint_wins_even_when_shorter(budgets: RateBudgets, clock: ManualClock) -> None:
    chat = budgets.for_chat(SLACK, "C1")
    chat.throttle(120.0)
    chat.throttle(2.0)
    assert chat.throttled_until == pytest.approx(1_002.0)
    task = asyncio.create_task(chat.acquire(Kind.FINAL, max_wait=5.0))
    await clock.advance(2.5)
    assert task.done() and task.exception() is None
    chat.throttle(1.0)
    chat.throttle(50.0)
    with pytest.raises(Deferred):
        await chat.acquire(Kind.FINAL, max_wait=5.0)


async def test_hint_arriving_while_waiting_defers_the_waiter(
    budgets: RateBudgets, clock: ManualClock
) -> None:
    chat = budgets.for_chat(TELEGRAM, "7")
    chat.throttle(2.0)
    task = asyncio.create_task(chat.acquire(Kind.FINAL, max_wait=10.0))
    await clock.advance(1.0)
    chat.throttle(600.0)
    await clock.advance(0.0)
    assert task.done()
    assert isinstance(task.exception(), Deferred)
    assert task.exception().until == pytest.approx(1_601.0)  # type: ignore[union-attr]


async def test_bounded_wait_returns_deferred_without_sleeping(
    budgets: RateBudgets, clock: ManualClock
) -> None:
    chat = budgets.for_chat(TELEGRAM, "9")
    chat.throttle(900.0)
    with pytest.raises(Deferred) as info:
        await asyncio.wait_for(chat.acquire(Kind.FINAL), timeout=1.0)
    assert info.value.until == pytest.approx(1_900.0)
    assert info.value.kind is Kind.FINAL
    assert chat.waiting == 0


async def test_cosmetic_traffic_is_shed_first(clock: ManualClock) -> None:
    budgets = RateBudgets(clock=clock)
    group = budgets.for_chat(TELEGRAM, "-100", chat_type="group")
    assert group.spec == TELEGRAM.per_chat
    assert group.try_acquire(Kind.TYPING)
    await clock.advance(1.0)
    for _ in range(24):  # 1/s for 24 s drains the 20/min bucket down to its reserve
        assert group.try_acquire(Kind.SEND)
        await clock.advance(1.0)
    assert group.try_acquire(Kind.TYPING) is False
    assert group.try_acquire(Kind.EDIT) is False
    with pytest.raises(Deferred):
        await group.acquire(Kind.EDIT)
    assert group.try_acquire(Kind.SEND)


async def test_cosmetic_refused_while_a_final_waits_and_after_throttle(
    budgets: RateBudgets, clock: ManualClock
) -> None:
    chat = budgets.for_chat(DISCORD, "chan")
    for _ in range(5):
        assert chat.try_acquire(Kind.SEND)
    assert chat.try_acquire(Kind.SEND) is False
    final = asyncio.create_task(chat.acquire(Kind.FINAL))
    await clock.advance(0.0)
    assert chat.waiting == 1
    assert chat.try_acquire(Kind.TYPING) is False
    await clock.advance(1.0)
    assert final.done() and final.exception() is None
    chat.throttle(5.0)
    await clock.advance(6.0)
    assert chat.try_acquire(Kind.SEND)
    assert chat.try_acquire(Kind.TYPING) is False
    await clock.advance(60.0)
    assert chat.try_acquire(Kind.TYPING)


async def test_final_is_served_before_an_earlier_send(clock: ManualClock) -> None:
    chat = ChatRateBudget(BudgetSpec((RateWindow(1, 1.0),)), clock=clock)
    assert chat.try_acquire(Kind.SEND)
    order: list[str] = []

    async def go(kind: Kind) -> None:
        await chat.acquire(kind)
        order.append(kind.value)

    send = asyncio.create_task(go(Kind.SEND))
    await clock.advance(0.0)
    final = asyncio.create_task(go(Kind.FINAL))
    await clock.advance(0.0)
    await clock.advance(1.0)
    await clock.advance(1.0)
    await asyncio.gather(send, final)
    assert order == ["final", "send"]


async def test_specs_are_data(clock: ManualClock) -> None:
    budgets = RateBudgets(
        {"custom": {"*": BudgetSpec((RateWindow(3, 10.0),))}, "*": {"*": BudgetSpec(())}},
        clock=clock,
    )
    chat = budgets.for_chat("custom", "x")
    assert [chat.try_acquire("send") for _ in range(4)] == [True, True, True, False]
    unlimited = budgets.for_chat("other", "y")
    assert all(unlimited.try_acquire("send") for _ in range(100))
    assert RateBudgets().spec_for("no-such-profile", "dm").windows == (RateWindow(1, 1.0),)


def test_a_declared_profile_picks_the_spec_by_chat_type() -> None:
    budgets = RateBudgets()
    assert budgets.spec_for(TELEGRAM, "dm").windows == (RateWindow(1, 1.0),)
    assert budgets.spec_for(TELEGRAM, "group").windows == (RateWindow(1, 1.0),
                                                           RateWindow(20, 60.0))
    assert budgets.spec_for(DISCORD, "thread").windows == (RateWindow(5, 5.0),)
    assert budgets.spec_for(RateProfile(per_chat=BudgetSpec(())), "dm").windows == ()


async def test_idle_budgets_are_evicted(budgets: RateBudgets, clock: ManualClock) -> None:
    for i in range(200):
        budgets.for_chat(TELEGRAM, str(i)).try_acquire(Kind.SEND)
    budgets.throttle(TELEGRAM, "busy", retry_after=1_000.0)
    assert len(budgets) == 201
    await clock.advance(400.0)
    budgets.for_chat(TELEGRAM, "fresh")
    assert len(budgets) == 2
    assert budgets.for_chat(TELEGRAM, "busy").throttled_until > clock.now()


async def test_close_wakes_waiters(budgets: RateBudgets, clock: ManualClock) -> None:
    chat = budgets.for_chat(TELEGRAM, "1")
    chat.throttle(5.0)
    task = asyncio.create_task(chat.acquire(Kind.FINAL))
    await clock.advance(0.0)
    budgets.close()
    await clock.advance(0.0)
    assert isinstance(task.exception(), BudgetClosed)
    with pytest.raises(BudgetClosed):
        budgets.for_chat(TELEGRAM, "1")
    assert chat.try_acquire(Kind.SEND) is False
