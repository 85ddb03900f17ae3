"""Bounded growth (RELIABILITY.md item 10): old bookkeeping rows are deleted periodically."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from typing import Any

import structlog

from gateway.health import process_stats

__all__ = ["prune_forever"]

log = structlog.get_logger("gateway.housekeeping")

DAY_S = 86400.0


async def prune_forever(store: Any, retention_days: float, clock: Callable[[], float],
                        interval_s: float = 3600.0) -> None:
    """Prune the ledgers now, then every `interval_s`, keeping `retention_days`, refresh the
    query planner's statistics and log the process's vital signs. Runs until cancelled; a
    failed pass is logged and retried at the next interval."""
    while True:
        try:
            counts = await store.prune_ledgers(clock() - retention_days * DAY_S)
            if any(counts.values()):
                log.info("ledgers_pruned", **counts)
            await store.optimize()
        except Exception as exc:  # noqa: BLE001 - housekeeping must never stop the gateway
            log.warning("ledger_prune_failed", error=type(exc).__name__)
        # One line an hour: a slow leak shows in the logs long before the OOM killer.
        log.info("process_stats", **process_stats(), gc_counts=list(gc.get_count()))
        await asyncio.sleep(interval_s)
