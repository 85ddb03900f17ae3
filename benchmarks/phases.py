"""Where the gateway's CPU goes, by phase (issue 21, deliverable 2).

Two sources, combined:
- counters: CPU time per thread from `/proc/self/task/<tid>/stat` (the event loop's thread,
  the storage threads, everything else) and the time the cyclic collector runs (gc
  callbacks); these cost nothing on the measured path;
- a deterministic profile (`cProfile`) of the event loop's thread in a separate pass, whose
  own time per function is grouped into phases by the module that holds the function (a
  built-in's time goes to the phase of its main caller). The profile's proportions, not its
  absolute times, are used: they split the loop thread's CPU from the counted pass.

cProfile makes Python calls dearer than C calls, so the split leans towards phases written in
Python; it is a guide to the biggest phase, not an exact account.
"""

from __future__ import annotations

import cProfile
import gc
import os
import pstats
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PHASES", "GCTimer", "ThreadCPU", "phase_of", "profile_split"]

# First match wins; paths are matched against the function's file name.
_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("logging", ("/structlog/", "/logging/", "gateway/logging")),
    ("adapter and pipeline", ("/adapters/", "gateway/inbound", "gateway/pipeline/",
                              "gateway/activity", "gateway/principals", "benchmarks/",
                              "gateway/events", "gateway/commands/")),
    ("session and mailbox", ("gateway/sessions/",)),
    ("delivery and streaming", ("gateway/delivery/", "gateway/ratelimit", "hermes_common/text")),
    ("storage (loop side)", ("/storage/", "/aiosqlite/")),
    ("model SDK and HTTP", ("/openai/", "/httpx/", "/httpx2/", "/httpcore/", "/aiohttp/", "/anyio/",
                            "/h11/", "/yarl/", "/multidict/", "/pydantic", "/json/",
                            "/jiter", "/ssl", "/socket", "/sniffio/", "/certifi/",
                            "/distro/", "/typing_extensions", "/http/", "/email/")),
    ("turn and agent loop", ("gateway/turns/", "/agent_core/", "gateway/agents",
                             "gateway/compression/", "gateway/metrics", "/prometheus_client/")),
    ("event loop", ("/asyncio/", "/uvloop/", "/selectors", "/threading", "/queue",
                    "/concurrent/")),
)
PHASES = [name for name, _ in _RULES] + ["other"]


def phase_of(filename: str) -> str | None:
    if filename == "~" or not filename:
        return None  # a built-in: decided by its caller
    for name, needles in _RULES:
        if any(n in filename for n in needles):
            return name
    return "other"


class GCTimer:
    """Seconds spent in the cyclic collector while installed (all generations)."""

    def __init__(self) -> None:
        self.total = 0.0
        self.collections = 0
        self._t0 = 0.0

    def _cb(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._t0
            self.collections += 1

    @contextmanager
    def counting(self) -> Iterator[GCTimer]:
        gc.callbacks.append(self._cb)
        try:
            yield self
        finally:
            gc.callbacks.remove(self._cb)


def _thread_cpu_s(native_id: int) -> float:
    try:
        with open(f"/proc/self/task/{native_id}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


class ThreadCPU:
    """CPU seconds per thread group between `start()` and `stop()`: the loop's thread, the
    storage threads (aiosqlite connections) and the rest. Threads that end in between count
    in "the rest" through the process total."""

    def __init__(self) -> None:
        self._before: dict[int, float] = {}
        self._proc0 = 0.0
        self.loop = self.storage = self.rest = 0.0

    @staticmethod
    def _group(t: threading.Thread) -> str:
        if t is threading.main_thread():
            return "loop"
        # aiosqlite runs each connection on a plain thread named after its worker function.
        return "storage" if "_connection_worker_thread" in t.name or "writer" in t.name \
            else "rest"

    def start(self) -> None:
        self._proc0 = time.process_time()
        self._before = {t.native_id or 0: _thread_cpu_s(t.native_id or 0)
                        for t in threading.enumerate()}

    def stop(self) -> None:
        total = time.process_time() - self._proc0
        sums: dict[str, float] = defaultdict(float)
        for t in threading.enumerate():
            tid = t.native_id or 0
            sums[self._group(t)] += _thread_cpu_s(tid) - self._before.get(tid, 0.0)
        self.loop, self.storage = sums["loop"], sums["storage"]
        self.rest = max(0.0, total - self.loop - self.storage)


@contextmanager
def profiled() -> Iterator[cProfile.Profile]:
    prof = cProfile.Profile()
    prof.enable()
    try:
        yield prof
    finally:
        prof.disable()


def profile_split(prof: cProfile.Profile) -> dict[str, float]:
    """Fractions of the profiled thread's own time per phase (sums to 1)."""
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]  # pstats keeps it untyped
    own: dict[str, float] = defaultdict(float)
    for (filename, _line, _name), (_cc, _nc, tottime, _ct, callers) in stats.items():
        phase = phase_of(filename)
        if phase is None:  # a built-in: the phase of the caller that spent most in it
            best = max(callers.items(), key=lambda kv: kv[1][2], default=None)
            phase = (phase_of(best[0][0]) if best else None) or "other"
        own[phase] += tottime
    total = sum(own.values()) or 1.0
    if os.environ.get("HERMES_BENCH_PHASE_DEBUG"):  # which functions land where
        rows = sorted(stats.items(), key=lambda kv: -kv[1][2])[:60]
        for (fn, line, name), (_cc, nc, tt, _ct, _callers) in rows:
            print(f"      {tt * 1000:8.1f} ms {nc:8d}  {phase_of(fn) or '(builtin)':<24} "
                  f"{fn.rsplit('/', 2)[-1] if fn != '~' else ''}:{line} {name}")
    return {p: own.get(p, 0.0) / total for p in PHASES}
