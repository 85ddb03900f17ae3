"""Benchmark: start-up of the `execute_code` sandbox (issue 16).

Measured: wall time of `run_script("pass")` from the call to the result, with the isolation
this host allows (namespaces when present) and with resource limits only: temporary folder
and generated `hermes_tools` module, socket pair, `unshare`, the child interpreter (`-I -S`)
setting its limits (and joining its pids cgroup as root), the script, and the clean-up.

Same-run baseline: a bare `python -c pass` subprocess started the same way (asyncio, same
interpreter), which does not run through the sandbox code; the ratio shows what the sandbox
adds to starting Python at all.

Goal: < 150 ms per start (a script is a tool call the model waits for; start-up should stay
small next to a model round trip). Timing: median of 15 runs after a warm-up, wall clock.
Usage: .venv/bin/python benchmarks/bench_sandbox.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent_core.sandbox import SandboxLimits, run_script  # noqa: E402
from agent_core.sandbox.isolation import Isolation, probe_isolation  # noqa: E402

GOAL_MS = 150.0
RUNS = 15


async def _median_ms(fn: Callable[[], Awaitable[object]]) -> float:
    await fn()
    samples = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


async def _bare_python() -> None:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await proc.wait()


async def _no_tools(tool: str, args: dict[str, object]) -> tuple[bool, str]:
    return False, "no tools"


async def main() -> int:
    workspace = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    limits = SandboxLimits(timeout_s=10)
    base = await _median_ms(_bare_python)
    print(f"{'case':44} {'median ms':>10} {'x baseline':>11}")
    print(f"{'baseline: bare python -c pass':44} {base:10.1f} {1.0:11.2f}")
    met = True
    for mode in ("auto", "rlimits"):
        iso = await probe_isolation(mode)

        async def start(iso: Isolation = iso) -> None:
            result = await run_script("pass", workspace=workspace, isolation=iso,
                                      limits=limits, schemas=[], dispatch=_no_tools)
            assert result.status == "success", result.output

        ms = await _median_ms(start)
        met &= ms < GOAL_MS
        label = f"sandbox start ({iso.name}{', pids cgroup' if iso.cgroup_root else ''})"
        print(f"{label:44} {ms:10.1f} {ms / base:11.2f}")
    print(f"goal: sandbox start-up < {GOAL_MS:g} ms: {'met' if met else 'missed'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
