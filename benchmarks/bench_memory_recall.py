"""Benchmark: what the external memory provider's plumbing adds to a turn (issue 17, deliverable 4).

Per user turn the agent waits for `MemoryManager.recall`: the provider's answer, then the fence
(NFKC, tag stripping, the threat scan of every entry, the cap) in a worker thread. After the
reply, `MemoryManager.sync` only enqueues. Measured with an in-process provider that answers at
once with 5 entries of ~200 characters (a typical recall), so only our overhead counts.

Same-run baseline: awaiting the provider's `recall` directly (what a turn would wait for with
no fence, no scan, no timeout task).

Goals: recall overhead below 5 ms per turn (next to a model call of hundreds of ms it is not
noticed; the scan of ~1 KB is about 1 ms of CPU, see bench_threat_scan.py); enqueueing a sync
below 0.1 ms (the turn never waits for the provider).

Timing: median process CPU time (`time.process_time`, every thread: the fence runs in a worker
thread) of repeated runs in one event loop, so waiting for a core on a busy machine does not
count; the wall-clock median is printed beside it. Usage:
.venv/bin/python benchmarks/bench_memory_recall.py
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import structlog

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent_core.memory import (  # noqa: E402
    MemoryManager,
    MemoryProvider,
    MemorySettings,
    ProviderSettings,
    UserScope,
)

GOAL_RECALL_MS = 5.0
GOAL_SYNC_MS = 0.1
ENTRIES = [
    f"Memory {i}: the user prefers concise answers, works on the billing service in Go, "
    f"deploys on Fridays only after the canary is green, and asked about rate limits twice. "
    f"Their team uses PostgreSQL 16 and keeps runbooks in the wiki under ops/{i}."
    for i in range(5)
]
SCOPE = UserScope("api:alice", "s-bench")


class Instant(MemoryProvider):
    name = "instant"

    async def recall(self, query: str, scope: UserScope) -> Sequence[str]:
        return ENTRIES

    async def sync_turn(self, user: str, assistant: str, scope: UserScope) -> None:
        return None


async def _median_ms(fn: Callable[[], Awaitable[object]], runs: int = 300
                     ) -> tuple[float, float]:
    """(median CPU ms, median wall ms) of one call."""
    for _ in range(20):
        await fn()
    cpu, wall = [], []
    for _ in range(runs):
        c0, w0 = time.process_time(), time.perf_counter()
        await fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu) * 1000, statistics.median(wall) * 1000


async def main() -> int:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    provider = Instant(ProviderSettings())
    manager = MemoryManager(provider, MemorySettings(sync_queue_size=100_000))
    base_cpu, base_wall = await _median_ms(lambda: provider.recall("what do I prefer?", SCOPE))
    cpu, wall = await _median_ms(lambda: manager.recall("what do I prefer?", SCOPE))

    async def enqueue() -> None:
        manager.sync("what do I prefer?", "Concise answers.", SCOPE)

    sync, _ = await _median_ms(enqueue, runs=2000)
    await manager.aclose()
    overhead = cpu - base_cpu
    print(f"recall (5 entries, {sum(map(len, ENTRIES)):,} chars): provider alone "
          f"{base_cpu:.3f} ms CPU, through the manager {cpu:.3f} ms CPU "
          f"(+{overhead:.3f} ms; goal < {GOAL_RECALL_MS} ms) "
          f"{'met' if overhead < GOAL_RECALL_MS else 'MISSED'}; wall {base_wall:.3f} -> "
          f"{wall:.3f} ms")
    print(f"sync enqueue: {sync:.4f} ms CPU (goal < {GOAL_SYNC_MS} ms) "
          f"{'met' if sync < GOAL_SYNC_MS else 'MISSED'}")
    return 0 if overhead < GOAL_RECALL_MS and sync < GOAL_SYNC_MS else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
