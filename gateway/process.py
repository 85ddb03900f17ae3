"""Process-level helpers of the daemon: settling the heap, leaving fast, a shutdown deadline."""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import gc
import os
import sys
import threading
from typing import Any

import structlog

__all__ = [
    "EXIT_FORCED",
    "SHUTDOWN_GRACE_S",
    "hard_exit",
    "process_stats",
    "settle_heap",
    "shutdown_deadline",
]

log = structlog.get_logger("gateway.process")


def settle_heap() -> None:
    """Once started: collect, then freeze what survived (modules, classes, the SDKs' type
    tables: ~100k objects) so later full collections walk only what serving created. Without
    this a full collection of a long-running gateway stalled the event loop for ~90 ms."""
    gc.collect()
    gc.freeze()


SHUTDOWN_GRACE_S = 60.0
EXIT_FORCED = 1


def hard_exit(code: int) -> None:
    """Leave immediately: flush what is buffered, skip the rest of the teardown."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()
        sys.stdout.flush()
    os._exit(code)


def shutdown_deadline(seconds: float) -> threading.Timer:
    """A started daemon timer that, unless cancelled, logs every thread's stack and ends the
    process with `EXIT_FORCED` (1: a supervisor restarts it)."""

    def expire() -> None:
        log.error("shutdown_stuck", after_s=seconds)
        with contextlib.suppress(Exception):
            faulthandler.dump_traceback(all_threads=True)
        hard_exit(EXIT_FORCED)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.name = "hermes-shutdown-deadline"
    timer.start()
    return timer

def process_stats() -> dict[str, Any]:
    """Resident memory (None where /proc is missing, e.g. macOS), threads and open tasks."""
    rss = None
    try:
        with open("/proc/self/statm") as f:
            rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    return {"rss_bytes": rss, "threads": threading.active_count(),
            "tasks": len(asyncio.all_tasks())}
