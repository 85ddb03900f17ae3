"""The chaos suite's replica mode, short: three gateway replicas on one PostgreSQL database
(made for the run) against the three platform fakes and the model; kill points hit the
owner of the busiest sessions and the Telegram polling leader (`kill -9` and SIGTERM), and
the database is cut off through a proxy (the shared server itself is never restarted).
Every invariant of `tests.chaos.invariants` holds, plus: no lease left held after the final
clean stop. Replay with `python benchmarks/chaos_gateway.py --replicas 3 --backend postgres
--quick --seed N`."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests import pg_support
from tests.chaos.run import ChaosOptions, run_chaos

pytestmark = pytest.mark.timeout(300)

SEED = int(os.environ.get("HERMES_CHAOS_SEED", "2020"))


def replica_options(seed: int) -> ChaosOptions:
    return ChaosOptions(seed=seed, duration_s=25, users=4, messages=45, kills=3,
                        platform_faults=8, storage_faults=2, model_fault_rate=0.1,
                        quiesce_s=60, rss_limit_mb=600, replicas=3, backend="postgres",
                        lease_s=4.0)


async def test_three_replicas_keep_every_promise_under_chaos(tmp_path: Path) -> None:
    reason = await asyncio.to_thread(pg_support.unreachable_reason)
    if reason is not None:
        pytest.skip(reason)
    result = await run_chaos(replica_options(SEED), tmp_path / "chaos")
    print(result.table())
    assert result.kills["SIGKILL"] and result.kills["SIGTERM"]
    assert result.faults["db_cut"] >= 1
    assert result.verdict.accepted >= 25
    assert result.verdict.ok, result.failure_text() + "\n" + result.table()
