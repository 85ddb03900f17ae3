"""Bounded growth (RELIABILITY.md item 10): old bookkeeping rows are deleted periodically."""

from __future__ import annotations

import asyncio
import gc
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import structlog

from gateway.process import process_stats, resettle_heap
from storage.ports import Maintenance

__all__ = ["CacheLimits", "prune_cache", "prune_cache_size", "prune_forever"]

log = structlog.get_logger("gateway.housekeeping")

DAY_S = 86400.0


@dataclass(frozen=True, slots=True)
class CacheLimits:
    """Sizes the attachment cache is kept under (0 = no limit): all of `root`, and each
    chat's folder `root/chats/<chat>/` on its own (so one busy chat cannot push every other
    chat's files out)."""

    root: Path
    max_bytes: int = 0
    chat_max_bytes: int = 0


async def prune_forever(store: Maintenance, retention_days: float, clock: Callable[[], float],
                        interval_s: float = 3600.0, *,
                        cache_dirs: Callable[[], Iterable[Path]] = tuple,
                        cache_days: float = 0.0,
                        cache_limits: CacheLimits | None = None) -> None:
    """Prune the ledgers now, then every `interval_s`, keeping `retention_days`; delete files
    in the folders `cache_dirs()` lists (cached attachments, saved tool output; it is called
    in a worker thread on every pass) older than `cache_days` (0 = keep); then the oldest
    files of the attachment cache past `cache_limits`; refresh the query planner's
    statistics and log the process's vital signs. Runs until cancelled; a failed pass is
    logged and retried at the next interval."""
    first = True
    while True:
        if cache_days > 0:
            try:
                cutoff = clock() - cache_days * DAY_S
                removed = 0
                for d in await asyncio.to_thread(lambda: list(cache_dirs())):
                    removed += await asyncio.to_thread(prune_cache, d, cutoff)
                if removed:
                    log.info("cache_pruned", files=removed)
            except Exception as exc:  # noqa: BLE001 - see above
                log.warning("cache_prune_failed", error=type(exc).__name__)
        if cache_limits is not None:
            try:
                files, freed = await asyncio.to_thread(_prune_sizes, cache_limits)
                if files:
                    log.info("cache_pruned_by_size", files=files, bytes=freed)
            except Exception as exc:  # noqa: BLE001 - see above
                log.warning("cache_prune_failed", error=type(exc).__name__)
        try:
            counts = await store.prune_ledgers(clock() - retention_days * DAY_S)
            if any(counts.values()):
                log.info("ledgers_pruned", **counts)
            await store.optimize()
        except Exception as exc:  # noqa: BLE001 - housekeeping must never stop the gateway
            log.warning("ledger_prune_failed", error=type(exc).__name__)
        # One line an hour: a slow leak shows in the logs long before the OOM killer.
        # Not on the pass at start: the heap was just settled (`settle_heap`).
        pause = None if first else resettle_heap()
        first = False
        log.info("process_stats", **process_stats(), gc_counts=list(gc.get_count()),
                 gc_frozen=gc.get_freeze_count(),
                 gc_resettle_ms=None if pause is None else round(pause, 1))
        await asyncio.sleep(interval_s)


def prune_cache(root: Path, older_than: float) -> int:
    """Delete regular files under `root` last modified before `older_than` (epoch seconds);
    symlinks are never followed. Blocking: run it in a thread. Returns how many went."""
    removed = 0
    for dirpath, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            path = Path(dirpath) / name
            try:
                st = path.lstat()
                if stat.S_ISREG(st.st_mode) and st.st_mtime < older_than:
                    path.unlink()
                    removed += 1
            except OSError:
                continue
    return removed


def _prune_sizes(limits: CacheLimits) -> tuple[int, int]:
    files = freed = 0
    if limits.chat_max_bytes > 0:
        try:
            chats = [d for d in (limits.root / "chats").iterdir() if d.is_dir()]
        except OSError:
            chats = []
        for chat in chats:
            n, b = prune_cache_size(chat, limits.chat_max_bytes)
            files, freed = files + n, freed + b
    if limits.max_bytes > 0:
        n, b = prune_cache_size(limits.root, limits.max_bytes)
        files, freed = files + n, freed + b
    return files, freed


def prune_cache_size(root: Path, max_bytes: int) -> tuple[int, int]:
    """Delete the least recently modified regular files under `root` until the rest take at
    most `max_bytes`; symlinks are never followed or counted. Blocking: run it in a thread.
    Returns (files deleted, bytes freed)."""
    found: list[tuple[float, int, Path]] = []
    for dirpath, _dirs, names in os.walk(root, followlinks=False):
        for name in names:
            path = Path(dirpath) / name
            try:
                st = path.lstat()
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                found.append((st.st_mtime, st.st_size, path))
    total = sum(size for _, size, _ in found)
    removed = freed = 0
    for _mtime, size, path in sorted(found, key=lambda f: (f[0], str(f[2]))):
        if total <= max_bytes:
            break
        try:
            path.unlink()
        except OSError:
            continue
        total -= size
        removed, freed = removed + 1, freed + size
    return removed, freed
