"""One outbound rate budget per chat, shared by sends, edits, typing and deletes.

A `ChatRateBudget` holds token buckets (one per `RateWindow` of its `BudgetSpec`) and the
server's latest throttle. Final replies and sends wait (bounded); cosmetic traffic (typing,
mid-stream edits) never waits and is shed first: it only passes when nobody is queued, the
chat is not throttled or recovering from a throttle, and a reserve of tokens stays for real
messages. Nothing sleeps for minutes inline: a wait longer than the caller's bound raises
`Deferred(until)` so the caller can keep the final in its durable outbox.

Limits are data: each adapter declares a `RateProfile` (per chat type) in its capabilities, and
the budgets look the spec up by that profile and the chat type. All time comes from an
injectable `Clock`, so tests drive budgets without real sleeping.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Protocol

from gateway.ports import BudgetSpec, RateProfile, RateWindow
from hermes_common.waits import sleep_unless

__all__ = [
    "Kind",
    "COSMETIC",
    "RateWindow",
    "RateProfile",
    "BudgetSpec",
    "DEFAULT_SPECS",
    "Clock",
    "MonotonicClock",
    "ManualClock",
    "Deferred",
    "BudgetClosed",
    "ChatRateBudget",
    "RateBudgets",
]


class Kind(StrEnum):
    """What an outbound call is for; decides its priority and whether it may wait."""

    FINAL = "final"
    SEND = "send"
    DELETE = "delete"
    EDIT = "edit"
    TYPING = "typing"


COSMETIC: frozenset[Kind] = frozenset({Kind.EDIT, Kind.TYPING})
_PRIORITY: Mapping[Kind, int] = MappingProxyType(
    {Kind.FINAL: 0, Kind.SEND: 1, Kind.DELETE: 2, Kind.EDIT: 3, Kind.TYPING: 4}
)


_ONE_PER_S = (RateWindow(1, 1.0),)

DEFAULT_SPECS: Mapping[str, Mapping[str, BudgetSpec]] = MappingProxyType({
    "*": MappingProxyType({"*": BudgetSpec(_ONE_PER_S)}),
})
"""Specs of profiles given by name (chat type → spec, "*" = any); adapters declare a
`RateProfile` in their capabilities instead."""


class Clock(Protocol):
    """Time source for budgets: `now()` in seconds and a matching `sleep`."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class MonotonicClock:
    """The real clock: `time.monotonic` and `asyncio.sleep`."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class ManualClock:
    """A clock that moves only when told (`advance`), for tests and simulations."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), fut))
        await fut

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking due sleepers in order and letting them run."""
        target = self._now + seconds
        while True:
            await _settle()
            if not self._sleepers or self._sleepers[0][0] > target:
                break
            at, _, fut = heapq.heappop(self._sleepers)
            self._now = max(self._now, at)
            if not fut.done():
                fut.set_result(None)
        self._now = target
        await _settle()


async def _settle(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


class Deferred(Exception):
    """The call may not go out before `until` (budget clock time), later than the caller
    allowed; queue it (durably, for a final) and retry then."""

    def __init__(self, until: float, kind: Kind) -> None:
        super().__init__(f"{kind.value} deferred until t={until:.3f}")
        self.until = until
        self.kind = kind


class BudgetClosed(RuntimeError):
    """The budget was closed (shutdown) while the call waited."""


@dataclass(slots=True)
class _Bucket:
    window: RateWindow
    tokens: float
    stamp: float

    def refill(self, now: float) -> None:
        rate = self.window.limit / self.window.period_s
        self.tokens = min(float(self.window.limit), self.tokens + (now - self.stamp) * rate)
        self.stamp = now

    def ready_at(self, now: float, need: float) -> float:
        if self.tokens >= need:
            return now
        return now + (need - self.tokens) * self.window.period_s / self.window.limit


@dataclass(order=True, slots=True)
class _Ticket:
    priority: int
    seq: int
    kind: Kind = field(compare=False)


class ChatRateBudget:
    """The rate budget of one chat. Not thread-safe; use from one event loop."""

    def __init__(self, spec: BudgetSpec, *, clock: Clock | None = None,
                 max_wait_s: float = 10.0) -> None:
        self.spec = spec
        self.max_wait_s = max_wait_s
        self._clock: Clock = clock or MonotonicClock()
        now = self._clock.now()
        self._buckets = [_Bucket(w, float(w.limit), now) for w in spec.windows]
        self._throttled_until = -math.inf
        self._quiet_until = -math.inf
        self._queue: list[_Ticket] = []
        self._seq = itertools.count()
        self._changed = asyncio.Event()
        self._closed = False
        self.last_used = now

    @property
    def throttled_until(self) -> float:
        """Clock time before which the server asked us not to call (-inf when never)."""
        return self._throttled_until

    @property
    def waiting(self) -> int:
        """Number of calls queued in `acquire`."""
        return len(self._queue)

    def idle(self, now: float) -> bool:
        """True when forgetting this budget loses nothing (no waiters, no throttle, full)."""
        self._refill(now)
        return (not self._queue and now >= self._quiet_until
                and all(b.tokens >= b.window.limit for b in self._buckets))

    def throttle(self, retry_after: float) -> None:
        """Apply a server hint: no calls for `retry_after` seconds from now. The newest hint
        replaces any earlier one, even a longer one. Must not raise."""
        now = self._clock.now()
        self._throttled_until = now + max(0.0, retry_after)
        self._quiet_until = self._throttled_until + self.spec.cosmetic_quiet_s
        self.last_used = now
        self._wake()

    def _refill(self, now: float) -> None:
        for b in self._buckets:
            b.refill(now)

    def _ready_at(self, now: float, kind: Kind) -> float:
        need = self._need(kind)
        at = max([now, self._throttled_until, *(b.ready_at(now, n) for b, n in
                                                zip(self._buckets, need, strict=True))])
        return at

    def _need(self, kind: Kind) -> list[float]:
        if kind not in COSMETIC:
            return [1.0] * len(self._buckets)
        return [1.0 + math.floor(b.window.limit * self.spec.cosmetic_reserve)
                for b in self._buckets]

    def _take(self, now: float) -> None:
        for b in self._buckets:
            b.tokens -= 1.0
        self.last_used = now

    def try_acquire(self, kind: Kind | str) -> bool:
        """Take a slot now if one is free; False instead of waiting. Cosmetic kinds are
        also refused while anything is queued, during a throttle and its quiet period, and
        when only the reserve is left. False once closed.

        Raises:
            ValueError: `kind` is not a `Kind` value.
        """
        kind = Kind(kind)
        now = self._clock.now()
        self._refill(now)
        if self._closed or self._queue:
            return False
        if kind in COSMETIC and now < self._quiet_until:
            return False
        if self._ready_at(now, kind) > now:
            return False
        self._take(now)
        return True

    async def acquire(self, kind: Kind | str, *, max_wait: float | None = None,
                      deadline: float | None = None) -> None:
        """Wait for a slot, higher priority first (final > send > delete > edit > typing).

        Waits at most `max_wait` seconds (default `self.max_wait_s`) and never past
        `deadline` (budget clock time). Cosmetic kinds never wait.

        Raises:
            Deferred: the slot would come later than allowed; `until` says when to retry.
            BudgetClosed: the budget was closed.
        """
        kind = Kind(kind)
        if self._closed:
            raise BudgetClosed("rate budget closed")
        now = self._clock.now()
        limit = now + (self.max_wait_s if max_wait is None else max_wait)
        if deadline is not None:
            limit = min(limit, deadline)
        if kind in COSMETIC:
            if self.try_acquire(kind):
                return
            self._refill(now)
            raise Deferred(max(self._ready_at(now, kind), self._quiet_until), kind)
        ticket = _Ticket(_PRIORITY[kind], next(self._seq), kind)
        heapq.heappush(self._queue, ticket)
        try:
            await self._wait_turn(ticket, kind, limit)
        finally:
            self._queue.remove(ticket)
            heapq.heapify(self._queue)
            self._wake()

    async def _wait_turn(self, ticket: _Ticket, kind: Kind, limit: float) -> None:
        while True:
            if self._closed:
                raise BudgetClosed("rate budget closed")
            now = self._clock.now()
            self._refill(now)
            ahead = sum(1 for t in self._queue if t < ticket)
            ready = self._ready_at(now, kind)
            if ahead == 0 and ready <= now:
                self._take(now)
                return
            step = min((w.period_s / w.limit for w in self.spec.windows), default=0.0)
            eta = ready + ahead * step
            if eta > limit:
                raise Deferred(eta, kind)
            await self._sleep_or_wake((ready if ahead == 0 else limit) - now)

    async def _sleep_or_wake(self, delay: float) -> None:
        self._changed.clear()
        await sleep_unless(delay, self._changed, sleep=self._clock.sleep)

    def _wake(self) -> None:
        self._changed.set()

    def close(self) -> None:
        """Refuse new calls and wake every waiter with `BudgetClosed`. Idempotent."""
        self._closed = True
        self._wake()


class RateBudgets:
    """Registry of chat budgets: one per (rate profile, chat key), created on first use with
    the spec for (profile, chat type), and evicted once idle for `idle_ttl_s` so memory stays
    bounded by the number of recently active chats."""

    def __init__(self, specs: Mapping[str, Mapping[str, BudgetSpec]] = DEFAULT_SPECS, *,
                 clock: Clock | None = None, idle_ttl_s: float = 600.0,
                 max_wait_s: float = 10.0) -> None:
        self._specs = specs
        self._clock: Clock = clock or MonotonicClock()
        self._ttl = idle_ttl_s
        self._max_wait = max_wait_s
        self._budgets: OrderedDict[tuple[RateProfile | str, str], ChatRateBudget] = OrderedDict()
        self._last_sweep = self._clock.now()
        self._closed = False

    def spec_for(self, profile: RateProfile | str, chat_type: str) -> BudgetSpec:
        """The spec for a rate profile and chat type ("dm", "group", "channel", "thread").
        A profile given by name is looked up in the registry's specs, falling back to its
        "*" entry, then to the global "*" entry."""
        if isinstance(profile, RateProfile):
            return profile.spec_for(chat_type)
        per = self._specs.get(profile) or self._specs.get("*") or {}
        spec = per.get(chat_type) or per.get("*")
        if spec is None:
            spec = (self._specs.get("*") or {}).get("*", BudgetSpec(_ONE_PER_S))
        return spec

    def for_chat(self, profile: RateProfile | str, chat_key: str,
                 chat_type: str = "dm") -> ChatRateBudget:
        """The budget of one chat, created if needed. `profile` is the adapter's declared
        `RateProfile` (or a name of the registry's specs); `chat_key` is what the platform
        limits (e.g. the chat id, which a chat's topics share).

        Raises:
            BudgetClosed: the registry was closed.
        """
        if self._closed:
            raise BudgetClosed("rate budgets closed")
        self.sweep()
        key = (profile, str(chat_key))
        budget = self._budgets.get(key)
        if budget is None:
            budget = ChatRateBudget(self.spec_for(profile, chat_type), clock=self._clock,
                                    max_wait_s=self._max_wait)
            self._budgets[key] = budget
        else:
            self._budgets.move_to_end(key)
        return budget

    def throttle(self, profile: RateProfile | str, chat_key: str, retry_after: float,
                 chat_type: str = "dm") -> None:
        """Feed a platform `retry_after` to that chat's budget. Must not raise."""
        if not self._closed:
            self.for_chat(profile, chat_key, chat_type).throttle(retry_after)

    def __len__(self) -> int:
        return len(self._budgets)

    def sweep(self, *, force: bool = False) -> int:
        """Evict budgets idle for longer than the TTL; returns how many. `for_chat` calls it,
        and then it runs at most every half TTL; `force=True` runs it now."""
        now = self._clock.now()
        if not force and now - self._last_sweep < self._ttl / 2:
            return 0
        self._last_sweep = now
        stale = [k for k, b in self._budgets.items()
                 if now - b.last_used >= self._ttl and b.idle(now)]
        for k in stale:
            del self._budgets[k]
        return len(stale)

    def close(self) -> None:
        """Close every budget (waiters get `BudgetClosed`) and forget them. Idempotent."""
        self._closed = True
        for b in self._budgets.values():
            b.close()
        self._budgets.clear()
