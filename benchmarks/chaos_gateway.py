"""The long chaos run (`make chaos`): the real gateway against the fakes of Telegram, Slack,
Discord and the model, with a seeded schedule of users, bursts, edits, redeliveries,
out-of-order arrival, model / platform / process / storage faults, then every invariant of
`tests/chaos/invariants.py`. Prints a table; exits 1 (printing the seed) on a violation.

    .venv/bin/python benchmarks/chaos_gateway.py [--duration 600] [--seed N] [--users 8]
        [--messages 2000] [--kills 24] [--quick] [--keep DIR] [--no-disk-full]
        [--replicas 3 --backend postgres]

`--replicas N --backend postgres`: N replicas on one PostgreSQL database made for the run
(`HERMES_TEST_PG`, default the local server), kill points aimed at session owners and the
polling leader, the storage faults cutting the database off through a proxy.

`--quick` runs the size of the test inside `make test` (with its seed unless --seed).
The run directory (gateway.log, state.db copy, violations.txt) is kept under --keep
(default /tmp/hermes-chaos/<seed>).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.chaos.run import ChaosOptions, run_chaos  # noqa: E402
from tests.chaos.test_chaos_quick import SEED as QUICK_SEED  # noqa: E402
from tests.chaos.test_chaos_quick import quick_options  # noqa: E402
from tests.chaos.test_chaos_replicas import SEED as REPLICA_SEED  # noqa: E402
from tests.chaos.test_chaos_replicas import replica_options  # noqa: E402


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=600.0, help="schedule length, seconds")
    p.add_argument("--seed", type=int, default=None, help="replay a run (default: random)")
    p.add_argument("--users", type=int, default=8)
    p.add_argument("--messages", type=int, default=None,
                   help="user messages (default: 3.4 per second of schedule)")
    p.add_argument("--kills", type=int, default=None,
                   help="kill points (default: one per 24 s of schedule)")
    p.add_argument("--quick", action="store_true", help="the size of the test in make test")
    p.add_argument("--keep", type=Path, default=None, help="run directory")
    p.add_argument("--no-disk-full", action="store_true", help="skip the tmpfs disk faults")
    p.add_argument("--replicas", type=int, default=1, help="gateway replicas (postgres)")
    p.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    return p.parse_args()


def main() -> int:
    a = parse()
    if a.quick and a.backend == "postgres":
        opts = replica_options(REPLICA_SEED if a.seed is None else a.seed)
    elif a.quick:
        opts = quick_options(QUICK_SEED if a.seed is None else a.seed)
    else:
        seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 10**6)
        messages = a.messages or int(a.duration * 3.4)
        kills = a.kills or max(4, int(a.duration / 24))
        opts = ChaosOptions(seed=seed, duration_s=a.duration, users=a.users,
                            messages=messages, kills=kills,
                            platform_faults=max(10, int(a.duration / 5)),
                            storage_faults=max(2, int(a.duration / 50)))
    opts.disk_full = not a.no_disk_full
    opts.backend = a.backend
    opts.replicas = a.replicas if a.backend == "postgres" else 1
    workdir = a.keep or Path("/tmp/hermes-chaos") / f"{opts.seed}-{int(time.time())}"
    print(f"chaos run: seed {opts.seed}, {opts.duration_s:.0f} s, {opts.messages} messages, "
          f"{opts.kills} kill points, {opts.replicas} replica(s) on {opts.backend}, "
          f"run directory {workdir}", flush=True)
    result = asyncio.run(run_chaos(opts, workdir))
    print(result.table())
    (workdir / "violations.txt").write_text("\n".join(result.verdict.violations()) + "\n")
    if not result.verdict.ok:
        print(result.failure_text())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
