"""What `delegate_task` costs per subagent above the model calls themselves.

One run: the model calls `delegate_task` with N tasks; the tool goes through the real
registry (argument validation, output handling) into the gateway's `AgentFactory` and
`Delegator`: a child agent per task, the parent's tools minus the blocked ones, the
semaphore (3 at once), usage and progress events, bounded reports, the result text. Each
child makes one streamed model call to the instant in-process fake model.

Baseline, same run: exactly the child requests the fake model received (the same bytes, the
same concurrency of 3), sent again with the bare `openai` SDK, none of our code on the path:
its aiohttp transport and `client.post(..., stream=True)` with its SSE decoding, the calls our
provider client makes. (The SDK's `chat.completions.create()` is several times slower than
that floor here: it transforms every parameter and builds a model per chunk, which our client
skips; measured against it, the overhead would come out negative.) The two paths alternate
in order from run to run; the figure is the median of the per-run differences.

    overhead per child = (delegate_task time − bare SDK time) / N

in wall-clock time and in the process's CPU time (both paths run in this one process with
the fake model, so the CPU difference is what our code adds; it is the steadier figure on a
shared, loaded machine, where wall time also counts the time other processes held the CPU).
Goal: < 5 ms per child. `--quick`: a few runs (smoke).

    .venv/bin/python benchmarks/bench_delegate.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import openai  # noqa: E402

from agent_core.delegation import CHILD_SYSTEM_PROMPT, Delegator  # noqa: E402
from agent_core.events import AgentEvent  # noqa: E402
from agent_core.tools.base import ToolCall, ToolContext  # noqa: E402
from gateway.agents import AgentFactory  # noqa: E402
from gateway.config.load import parse_config  # noqa: E402
from gateway.logging import configure_logging  # noqa: E402
from gateway.paths import ProfilePaths, ensure_profile_dirs  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest, Script, text  # noqa: E402

GOAL_MS = 5.0
REPORT = ("Outcome: the three files agree. I read config.yaml, setup.cfg and the README; the "
          "version is 2.4.1 everywhere and nothing else needs a change. ") * 4


def responder(req: RecordedRequest) -> Script:
    return text(REPORT)


def _factory(server: FakeOpenAIServer, home: Path) -> AgentFactory:
    config = parse_config({
        "providers": {"main": {"base_url": server.base_url, "api_keys": ["sk-bench"],
                               "model": "fake-model", "timeout_s": 30, "max_retries": 0}},
        "logging": {"file": {"enabled": False}},
    }, env={})[0]
    return AgentFactory(config, ensure_profile_dirs(ProfilePaths(home)))


def _emit(_event: AgentEvent) -> None:
    """Progress and usage events, as the turn loop would take them (dropped here)."""


async def _delegated(factory: AgentFactory, ctx: ToolContext,
                     tasks: int) -> tuple[float, float]:
    call = ToolCall("call_bench", "delegate_task", json.dumps(
        {"tasks": [{"goal": f"Check file number {i} for the version string",
                    "context": "the repository is in the workspace"} for i in range(tasks)]}))
    start, cpu = time.perf_counter(), time.process_time()
    [out] = await factory.registry.execute([call], ctx)
    took = (time.perf_counter() - start, time.process_time() - cpu)
    assert out.ok and out.content.count(": completed (") == tasks, out.content[:300]
    return took


async def _bare(client: openai.AsyncOpenAI, requests: list[RecordedRequest],
                concurrency: int) -> tuple[float, float]:
    gate = asyncio.Semaphore(concurrency)

    async def one(req: RecordedRequest) -> None:
        async with gate:
            stream = await client.post("/chat/completions", content=req.raw, cast_to=object,
                                       stream=True, stream_cls=openai.AsyncStream[object])
            async for _ in stream:
                pass

    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(r) for r in requests))
    return time.perf_counter() - start, time.process_time() - cpu


async def main(quick: bool) -> int:
    runs, tasks = (4, 3) if quick else (30, 9)
    with tempfile.TemporaryDirectory() as tmp:
        # As in production: INFO and up, JSON lines (to a throwaway file and stream).
        configure_logging(level="INFO", fmt="json", log_dir=Path(tmp) / "logs",
                          stream=io.StringIO(), profile="bench")
        async with FakeOpenAIServer(responder=responder) as server:
            factory = _factory(server, Path(tmp))
            selection = factory.selection("api")
            workspace = Path(tmp) / "workspace"
            ctx = ToolContext(workspace=workspace, session_id="bench", principal="api:bench",
                              subagents=Delegator(factory, selection, factory.delegation),
                              emit=_emit)
            # The transport our provider client uses (the SDK's aiohttp one), so the baseline
            # differs from our path only by our code.
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-bench",
                                        max_retries=0, timeout=30,
                                        http_client=openai.DefaultAioHttpClient(timeout=30))
            concurrency = factory.delegation.max_concurrent
            wall: list[float] = []
            cpu: list[float] = []
            ours_s, bare_s = 0.0, 0.0
            sent: list[RecordedRequest] = []
            for run in range(runs + 1):  # run 0 warms both paths up
                bare_first = run % 2 == 1 and bool(sent)
                bare = await _bare(client, sent, concurrency) if bare_first else (0.0, 0.0)
                mark = len(server.requests)
                ours = await _delegated(factory, ctx, tasks)
                sent = server.requests[mark:]
                assert len(sent) == tasks
                assert all(r.messages[0]["content"] == CHILD_SYSTEM_PROMPT for r in sent)
                if not bare_first:
                    bare = await _bare(client, sent, concurrency)
                if run == 0:
                    continue
                ours_s += ours[0]
                bare_s += bare[0]
                wall.append((ours[0] - bare[0]) / tasks * 1000)
                cpu.append((ours[1] - bare[1]) / tasks * 1000)
            await client.close()
            await factory.aclose()
    load = os.getloadavg()[0]
    print(f"delegate_task overhead per subagent ({tasks} tasks a call, {concurrency} at once, "
          f"{runs} calls, one streamed model call per subagent, instant in-process fake model; "
          f"load average {load:.1f} on {os.cpu_count()} cores)")
    for name, figures in (("wall clock", wall), ("CPU time", cpu)):
        median = statistics.median(figures)
        p90 = sorted(figures)[int(0.9 * (len(figures) - 1))]
        verdict = "met" if median < GOAL_MS else "missed"
        print(f"  {name:>10}: overhead median {median:.3f} ms, p90 {p90:.3f} ms per subagent "
              f"-> goal < {GOAL_MS} ms {verdict}")
    print(f"  delegate_task {ours_s:.3f} s vs bare SDK {bare_s:.3f} s (wall) for the same "
          f"{runs * tasks} requests (ratio {ours_s / bare_s:.2f}x)")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few calls only (smoke run)")
    sys.exit(asyncio.run(main(parser.parse_args().quick)))
