"""The quick chaos run inside `make test`: a seeded schedule of ~35 s against the real
gateway (three platforms and the model faked at the wire), with restarts by SIGTERM and
SIGKILL, then every invariant of `tests.chaos.invariants`. A failure prints the seed and the
table; replay it with `python benchmarks/chaos_gateway.py --quick --seed N`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.chaos.run import ChaosOptions, run_chaos

pytestmark = pytest.mark.timeout(240)

SEED = int(os.environ.get("HERMES_CHAOS_SEED", "1515"))


def quick_options(seed: int) -> ChaosOptions:
    return ChaosOptions(seed=seed, duration_s=25, users=4, messages=50, kills=3,
                        platform_faults=12, storage_faults=2, model_fault_rate=0.1,
                        quiesce_s=45, rss_limit_mb=600, disk_mb=48)


async def test_quick_chaos_run_keeps_every_promise(tmp_path: Path) -> None:
    result = await run_chaos(quick_options(SEED), tmp_path / "chaos")
    print(result.table())
    assert sum(result.kills.values()) >= 4  # 3 kill points, one at start-up (two signals)
    assert result.kills["SIGTERM"] and result.kills["SIGKILL"]
    assert result.verdict.accepted >= 30
    assert result.verdict.ok, result.failure_text() + "\n" + result.table()
