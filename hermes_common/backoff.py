"""The one retry-delay policy: exponential, capped, jittered, honouring a server's retry-after.

Every retry loop of ours computes its pause with a `Backoff` (the supervisor's adapter
restarts, the agent's provider retries, Telegram's polling, the outbox's re-sends, SQLite's
busy retries) and waits with `hermes_common.waits`. The loops stay ours: they classify errors,
report the delay before waiting and wait cancellably, which decorator-style retry libraries
(`backoff`, `stamina`/tenacity) do not allow; what they would add over this module is the loop.

Nominal delay before retry `attempt` (1-based): `min(cap_s, base_s * 2**(attempt - 1))`.
Jitter takes a random share of at most `jitter` off it, so the delay lies in
`[nominal * (1 - jitter), nominal]`: it never exceeds the cap, and with `jitter < 0.5`
consecutive delays strictly grow until the cap ("equal jitter" is `jitter = 0.5`).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

__all__ = ["Backoff"]


@dataclass(frozen=True, slots=True)
class Backoff:
    """An immutable policy; `delay()` is pure given `rand`.

    `retry_after_cap_s` bounds a server's hint (`retry_after`), which otherwise replaces the
    computed delay as given. Raises `ValueError` for a negative base or cap, or a jitter
    outside [0, 1].
    """

    base_s: float = 1.0
    cap_s: float = 60.0
    jitter: float = 0.25
    retry_after_cap_s: float = math.inf

    def __post_init__(self) -> None:
        if self.base_s < 0 or self.cap_s < 0 or self.retry_after_cap_s < 0:
            raise ValueError("backoff base, cap and retry-after cap must not be negative")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("backoff jitter must be between 0 and 1")

    def nominal(self, attempt: int) -> float:
        """The delay before retry `attempt` without jitter (attempt < 1 counts as 1)."""
        try:
            raw = self.base_s * 2.0 ** max(0, attempt - 1)
        except OverflowError:
            raw = math.inf
        return min(self.cap_s, raw)

    def delay(self, attempt: int, rand: float | None = None, *,
              retry_after: float | None = None) -> float:
        """Seconds to wait before retry `attempt` (1-based).

        `retry_after` (a server's hint) wins when given: clamped to
        `[0, retry_after_cap_s]`, without jitter. Otherwise the nominal delay minus
        `jitter * rand` of it; `rand` in [0, 1] (clamped), drawn from `random.random()` when
        None (inject it for reproducible tests). Never raises for numbers.
        """
        if retry_after is not None:
            return min(max(0.0, retry_after), self.retry_after_cap_s)
        share = random.random() if rand is None else min(max(rand, 0.0), 1.0)
        return self.nominal(attempt) * (1.0 - self.jitter * share)
