"""Per-provider credential pool: which API key to use next, and which keys to leave alone.

Each key is `ok`, `exhausted` until a point in time, or `dead` (revoked: never used again in
this process). The pool is shared by every turn of the process; all methods are synchronous and
never await, so they are safe under asyncio without a lock. Nothing here ever logs or returns a
key inside a message: `Credential.label` is what may be shown.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from agent_core.errors import ClassifiedError, FailoverReason

__all__ = ["Credential", "CredentialPool", "KeyState", "Strategy"]

Strategy = Literal["fill_first", "round_robin"]


class KeyState(StrEnum):
    OK = "ok"
    EXHAUSTED = "exhausted"
    DEAD = "dead"


@dataclass(slots=True, eq=False)
class Credential:
    key: str
    label: str
    state: KeyState = KeyState.OK
    until: float = 0.0
    auth_failures: int = 0
    requests: int = 0
    last_reason: str | None = None

    def __repr__(self) -> str:  # never show the key
        return f"Credential({self.label}, {self.state.value})"


@dataclass(frozen=True, slots=True)
class Cooldowns:
    """Seconds a key rests after each kind of failure (a provider's Retry-After wins)."""

    rate_limit: float = 60.0
    billing: float = 3600.0
    auth: float = 300.0


class CredentialPool:
    """Keys of one provider with their health.

    `select()` returns the key to use now (or None when every key is resting or dead);
    `report_failure()` records a classified failure against the key that got it.
    """

    def __init__(
        self,
        keys: Sequence[str],
        *,
        strategy: Strategy = "fill_first",
        cooldowns: Cooldowns | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._creds = [Credential(k, f"key#{i + 1}") for i, k in enumerate(dict.fromkeys(keys)) if k]
        self._strategy: Strategy = strategy
        self._cooldowns = cooldowns or Cooldowns()
        self._clock = clock
        self._rr = 0

    @property
    def credentials(self) -> tuple[Credential, ...]:
        return tuple(self._creds)

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(c.key for c in self._creds)

    def _usable(self, cred: Credential, now: float) -> bool:
        if cred.state is KeyState.DEAD:
            return False
        if cred.state is KeyState.EXHAUSTED:
            if now < cred.until:
                return False
            cred.state = KeyState.OK
        return True

    def select(self) -> Credential | None:
        """The key to use for the next request, or None if none is usable now."""
        now = self._clock()
        n = len(self._creds)
        if self._strategy == "round_robin":
            for i in range(n):
                cred = self._creds[(self._rr + i) % n]
                if self._usable(cred, now):
                    self._rr = (self._rr + i + 1) % n
                    cred.requests += 1
                    return cred
            return None
        for cred in self._creds:
            if self._usable(cred, now):
                cred.requests += 1
                return cred
        return None

    def available(self, exclude: Credential | None = None) -> bool:
        now = self._clock()
        return any(c is not exclude and self._usable(c, now) for c in self._creds)

    def next_ready_in(self) -> float | None:
        """Seconds until the earliest resting key is usable again (0 if one is usable now)."""
        now = self._clock()
        waits = [
            0.0 if self._usable(c, now) else c.until - now
            for c in self._creds
            if c.state is not KeyState.DEAD
        ]
        return max(0.0, min(waits)) if waits else None

    def report_failure(self, cred: Credential, error: ClassifiedError) -> KeyState:
        """Rest or retire `cred` after `error`; returns its new state. Must not raise."""
        now = self._clock()
        cred.last_reason = error.reason.value
        if cred.state is KeyState.DEAD:
            return cred.state
        reason = error.reason
        if reason in (FailoverReason.AUTH, FailoverReason.AUTH_PERMANENT):
            cred.auth_failures += 1
            if reason is FailoverReason.AUTH_PERMANENT or cred.auth_failures >= 2:
                cred.state = KeyState.DEAD
                return cred.state
            rest = self._cooldowns.auth
        elif reason is FailoverReason.BILLING:
            rest = max(self._cooldowns.billing, error.retry_after or 0.0)
        else:
            rest = max(self._cooldowns.rate_limit, error.retry_after or 0.0)
        cred.state = KeyState.EXHAUSTED
        cred.until = max(cred.until, now + rest)
        return cred.state

    def report_success(self, cred: Credential) -> None:
        cred.auth_failures = 0
