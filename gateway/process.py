"""Process-level helpers of the daemon: settling the heap, leaving fast, a shutdown deadline."""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import gc
import os
import sys
import threading
import time
from typing import Any

import structlog

from hermes_common import codecache
from hermes_common.lean import resume_collector

__all__ = [
    "EXIT_FORCED",
    "EXIT_STORAGE",
    "SHUTDOWN_GRACE_S",
    "detect_ca_bundle",
    "hard_exit",
    "keep_startup_code",
    "process_stats",
    "resettle_heap",
    "settle_heap",
    "unsettle_heap",
    "shutdown_deadline",
]

log = structlog.get_logger("gateway.process")


def settle_heap() -> None:
    """Once started: freeze what start-up left (modules, classes, the SDKs' type tables:
    ~100k objects) so later collections walk only what serving created. Without this a full
    collection of a long-running gateway stalled the event loop for ~90 ms. Nothing is
    collected here: a full collection of the start-up heap stalled the loop for 40-60 ms
    just as the gateway became ready, to reclaim ~2,500 objects of cyclic garbage the
    imports left (a few hundred KB); those wait, frozen, for the first hourly
    `resettle_heap()`.

    From then on the survivors of every collection are frozen too (the middle generation
    is collected with every young one). A collection's pause grows with
    the objects it walks, scattered over the heap (about 1.4 us each on a slow host), and at
    1,000 chats in flight their turns hold 100-250k live objects: walked by every full
    collection (4 a run of 10,000 events, 200-370 ms each) and by the middle generation
    every 50,000 allocations (~100 ms each). Now a young collection walks at most the last
    `YOUNG_THRESHOLD` allocations (a few ms), and an object that lived through one is left
    to refcounting, which frees what a turn let go of. (Freezing only what lived through
    two walked every object of a turn twice: 0.58 ms of collector time per event at 1,000
    chats against 0.28 now, with the same 20 objects for the hourly resettle to reclaim
    after 5,000 events.) The message path makes no cyclic garbage (its one cycle, in the inbound
    chain, is gone: `tests/gateway/test_pipeline_chain.py`); cycles that do end up frozen
    are reclaimed by `resettle_heap()` (housekeeping, hourly: the one walk of the whole
    heap)."""
    global _thresholds
    resume_collector()  # paused for start-up by `hermes gateway run`
    if _freeze_survivors not in gc.callbacks:
        gc.callbacks.append(_freeze_survivors)
        _thresholds = gc.get_threshold()
        gc.set_threshold(YOUNG_THRESHOLD, 1, *_thresholds[2:])
    gc.freeze()
    keep_startup_code()


def keep_startup_code() -> None:
    """Start-up is over: the dataclass methods it compiled are kept for the next start
    (`hermes_common.codecache`), written by a short-lived thread (not a daemon: a stop right
    after ready lets it finish its few milliseconds rather than leave a temp file). A no-op
    when `hermes gateway run` did not install the cache (tests, benchmarks)."""
    if codecache.active() is None:
        return
    threading.Thread(target=codecache.finish_dataclass_code, name="hermes-keep-startup-code",
                     daemon=False).start()


#: Net allocations between young collections (700 by default: at 5,000 the collector ran
#: a seventh as often per event; at 2,000 each young pause stays at a few ms at 1,000 chats).
YOUNG_THRESHOLD = 2000
#: Survivors of a collection of this generation or older are frozen (see `settle_heap`).
FREEZE_FROM_GENERATION = 0
_thresholds: tuple[int, ...] | None = None


def _freeze_survivors(phase: str, info: dict[str, int]) -> None:
    if phase == "stop" and info.get("generation", 0) >= FREEZE_FROM_GENERATION:
        gc.freeze()


def resettle_heap() -> float | None:
    """Give the frozen objects back to the collector, collect once (the only full walk of the
    whole heap, one pause an hour), freeze the survivors again. Returns the pause in ms, or
    None when `settle_heap()` is not in effect (nothing was frozen along the way)."""
    if _freeze_survivors not in gc.callbacks:
        return None
    t0 = time.perf_counter()
    gc.unfreeze()
    gc.collect()  # the callback freezes what survived
    return (time.perf_counter() - t0) * 1000


def unsettle_heap() -> None:
    """Undo `settle_heap()`: survivors are no longer frozen, frozen objects are collectable."""
    global _thresholds
    resume_collector()
    with contextlib.suppress(ValueError):
        gc.callbacks.remove(_freeze_survivors)
    if _thresholds is not None:
        gc.set_threshold(*_thresholds)
        _thresholds = None
    gc.unfreeze()


SHUTDOWN_GRACE_S = 60.0
EXIT_FORCED = 1
EXIT_STORAGE = 74  # EX_IOERR: state.db's writer stopped; a restart reopens it


def hard_exit(code: int) -> None:
    """Leave immediately: flush what is buffered, skip the rest of the teardown."""
    try:
        sys.stderr.flush()
        sys.stdout.flush()
    except (OSError, ValueError):  # a closed or broken stream: nowhere left to report it
        pass
    finally:
        os._exit(code)


def shutdown_deadline(seconds: float) -> threading.Timer:
    """A started daemon timer that, unless cancelled, logs every thread's stack and ends the
    process with `EXIT_FORCED` (1: a supervisor restarts it)."""

    def expire() -> None:
        log.error("shutdown_stuck", after_s=seconds)
        try:
            faulthandler.dump_traceback(all_threads=True)
        except (OSError, ValueError, RuntimeError) as exc:  # no usable stderr
            log.error("shutdown_stacks_not_dumped", error=type(exc).__name__)
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


def detect_ca_bundle() -> str | None:
    """Point OpenSSL at certifi's bundle when the system gives none (minimal containers)."""
    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return os.environ.get("SSL_CERT_FILE")
    import ssl

    default = ssl.get_default_verify_paths()
    if default.cafile and os.path.exists(default.cafile):
        return default.cafile
    try:
        import certifi
    except ImportError:
        return None
    os.environ["SSL_CERT_FILE"] = certifi.where()
    return certifi.where()
