"""Benchmark: overhead per call of an MCP stdio tool through our client (issue 16).

Path judged: what a turn does for one MCP call: `ToolSelection.execute` (JSON arguments
parsed and validated, the batch planned, the call timed out and interrupt-guarded by the
registry, the output cut to its cap) → `McpConnection.call` (timeout, error mapping) → the
SDK's `Client.call_tool` → the server (tests/mcp/server.py, `echo`, over stdio) → the result's
text. Same-run baseline: the bare SDK `Client` over stdio calling the same tool on its own
process of the same server, which is the server's own time plus the SDK and the pipes.

Goal: our path costs less than 2 ms more per call than the baseline. Why: a tool call is
worth it when the tool's own work dominates; 2 ms is below what a user notices in a turn
that already waits a model round trip of hundreds of ms.

Timing: the two paths alternate call by call; the overhead is the median of the paired
differences (ours minus the baseline call just before it), so both see the same machine load
(a shared machine's load moves medians of whole runs by milliseconds). Wall clock is judged
(the server runs in another process); the client process's CPU time per call is printed too.
Usage: .venv/bin/python benchmarks/bench_mcp.py
"""

from __future__ import annotations

import asyncio
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcp import Client, StdioServerParameters  # noqa: E402

from agent_core.tools.base import ToolCall, ToolContext  # noqa: E402
from agent_core.tools.registry import ToolRegistry  # noqa: E402
from agent_core.tools.toolsets import select  # noqa: E402
from gateway.config.mcp import McpServerConfig  # noqa: E402
from gateway.logging import configure_logging  # noqa: E402
from gateway.mcp import McpHub  # noqa: E402

GOAL_OVERHEAD_MS = 2.0
SERVER = ROOT / "tests" / "mcp" / "server.py"
ROUNDS = 600


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # As in production: INFO and up, JSON lines (to a throwaway file).
        configure_logging(level="INFO", fmt="json", log_dir=work / "logs",
                          stream=io.StringIO(), profile="bench")
        cfg = McpServerConfig(command=sys.executable, args=[str(SERVER), "stdio"])
        hub = McpHub({"bench": cfg}, home=work / "mcp", logs_dir=work / "logs")
        await hub.start()
        params = StdioServerParameters(command=sys.executable, args=[str(SERVER), "stdio"])
        try:
            async with Client(params) as bare:
                chosen = select(ToolRegistry(), None, [hub])
                ctx = ToolContext(workspace=work, output_dir=work / "out", session_id="bench")
                args = json.dumps({"text": "hello"})

                async def ours() -> None:
                    [out] = await chosen.execute([ToolCall("c", "mcp__bench__echo", args)], ctx)
                    assert out.ok, out.content

                async def baseline() -> None:
                    res = await bare.call_tool("echo", {"text": "hello"})
                    assert not res.is_error

                for fn in (ours, baseline):  # warm-up
                    for _ in range(20):
                        await fn()
                walls: dict[str, list[float]] = {"ours": [], "base": []}
                cpus: dict[str, list[float]] = {"ours": [], "base": []}
                for _ in range(ROUNDS):
                    for name, fn in (("base", baseline), ("ours", ours)):
                        w0, c0 = time.perf_counter(), time.process_time()
                        await fn()
                        cpus[name].append((time.process_time() - c0) * 1000)
                        walls[name].append((time.perf_counter() - w0) * 1000)
        finally:
            await hub.stop()
    med = statistics.median
    overhead = med(o - b for o, b in zip(walls["ours"], walls["base"], strict=True))
    cpu_overhead = med(o - b for o, b in zip(cpus["ours"], cpus["base"], strict=True))
    base_wall, ours_wall = med(walls["base"]), med(walls["ours"])
    print(f"MCP stdio tool call (echo), {ROUNDS} rounds, the two paths alternating")
    print(f"  baseline, bare SDK Client.call_tool:  wall {base_wall:6.3f} ms/call, "
          f"client CPU {med(cpus['base']):6.3f} ms/call")
    print(f"  ours, ToolSelection.execute -> MCP:   wall {ours_wall:6.3f} ms/call, "
          f"client CPU {med(cpus['ours']):6.3f} ms/call")
    print(f"  overhead (median of paired differences): wall {overhead:+.3f} ms/call, "
          f"client CPU {cpu_overhead:+.3f} ms/call; ratio ours/baseline (wall): "
          f"{ours_wall / base_wall:.2f}")
    met = overhead < GOAL_OVERHEAD_MS
    print(f"  goal: < {GOAL_OVERHEAD_MS:g} ms above the baseline: {'met' if met else 'missed'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
