"""The seeded random schedule of a chaos run: what users do, and which faults land when.

Everything random in a run comes from the seed: this schedule, the model's faults (their own
generator, seeded from the same seed) and the platform drivers' choices. Wall-clock timing
still varies between runs (what a kill interrupts depends on how far the gateway got), so a
replay with the same seed runs the same script, not the same interleaving.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["KILL_MODES", "Action", "Plan", "make_schedule"]

KILL_MODES: tuple[tuple[str, float], ...] = (
    ("sigterm_turn", 3), ("sigterm_compression", 2), ("sigterm_startup", 1.5),
    ("sigterm_drain", 1.5), ("sigkill_turn", 3), ("sigkill_random", 2),
    ("sigkill_startup", 1),
)


@dataclass(frozen=True)
class Action:
    at: float  # seconds from the start of the run
    kind: str  # send | burst | edit | redeliver | reorder | platform | slow | kill | read_txn |
    #            disk_full
    conv: int = 0  # index into the run's conversations
    count: int = 1
    name: str = ""  # fault or kill mode
    seconds: float = 0.0


@dataclass(frozen=True)
class Plan:
    seed: int
    duration_s: float
    messages: int  # target number of user messages (bursts count each part)
    kills: int
    platform_faults: int
    storage_faults: int


def _times(rng: random.Random, n: int, start: float, end: float) -> list[float]:
    return sorted(rng.uniform(start, end) for _ in range(n))


def make_schedule(plan: Plan, rng: random.Random, convs: list[float],
                  platform_faults: list[tuple[str, str]]) -> list[Action]:
    """`platform_faults`: (platform, fault) pairs to choose from; `convs`: the weight of
    each conversation (how likely a message goes there). Kills are spread evenly (with jitter) so the gateway gets time
    to run between them; messages arrive at random (Poisson-like) times."""
    end = plan.duration_s
    out: list[Action] = []
    sent = 0
    t = 0.5
    rate = plan.messages / max(end - 1.0, 1.0)
    while sent < plan.messages:
        t += rng.expovariate(rate)
        if t >= end:
            t = rng.uniform(0.5, end)
        roll = rng.random()
        conv = rng.choices(range(len(convs)), convs)[0]
        if roll < 0.10:
            n = min(rng.randint(2, 4), plan.messages - sent)
            out.append(Action(t, "burst", conv, n))
            sent += n
        elif roll < 0.15 and plan.messages - sent >= 2:
            out.append(Action(t, "reorder", conv, 2))
            sent += 2
        else:
            out.append(Action(t, "send", conv))
            sent += 1
        if rng.random() < 0.06:
            out.append(Action(t + rng.uniform(0.5, 4.0), "redeliver"))
        if rng.random() < 0.04:
            out.append(Action(t + rng.uniform(0.5, 4.0), "edit"))
    for at in _times(rng, plan.platform_faults, 1.0, end):
        platform, fault = rng.choice(platform_faults)
        if fault.endswith("_slow"):
            out.append(Action(at, "slow", name=platform, seconds=rng.uniform(0.5, 2.5)))
        else:
            out.append(Action(at, "platform", name=f"{platform}:{fault}"))
    if plan.kills:
        gap = (end - 2.0) / plan.kills
        modes, weights = zip(*KILL_MODES, strict=True)
        for i in range(plan.kills):
            # the first three kills cover both signals and a start-up kill in every run
            mode = (("sigterm_turn", "sigkill_turn", "sigterm_startup")[i] if i < 3
                    else rng.choices(modes, weights)[0])
            out.append(Action(2.0 + gap * i + rng.uniform(0.2, 0.8) * gap, "kill", name=mode))
    for i, at in enumerate(_times(rng, plan.storage_faults, 1.0, end)):
        # the first two are one of each kind, so even a short run has both
        if i == 0 or i > 1 and rng.random() < 0.6:
            out.append(Action(at, "read_txn", seconds=rng.uniform(1.0, 5.0)))
        else:
            out.append(Action(at, "disk_full", seconds=rng.uniform(1.0, 4.0)))
    out.sort(key=lambda a: a.at)
    return out
