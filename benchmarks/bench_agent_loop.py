"""Per-model-call overhead of the agent turn loop.

Each turn: history of N messages + a user message → the (instant, local) fake model asks for
10 tool calls → the registry runs them → the model answers in text. So two model calls a turn.

    overhead per call = (turn wall time − time spent inside ProviderClient.complete) / calls

Time inside `complete` (SDK request building, HTTP to the in-process fake server, SSE parsing)
is the "model" time. Baseline, same run: the same number of bare SDK streaming calls with the
same message lists; the ratio loop/bare shows what the loop adds on top of the SDK.
Goal: < 2 ms overhead per model call at 200 messages.

    .venv/bin/python benchmarks/bench_agent_loop.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import openai  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from agent_core.agent import Agent, AgentConfig  # noqa: E402
from agent_core.events import Final  # noqa: E402
from agent_core.provider import ModelResponse, ProviderClient, ProviderRouter, ProviderSettings  # noqa: E402
from agent_core.tools.base import ToolContext  # noqa: E402
from agent_core.tools.registry import Tool, ToolRegistry  # noqa: E402
from tests.fakes.openai_server import (  # noqa: E402
    FakeOpenAIServer,
    RecordedRequest,
    Script,
    call,
    text,
    tool_calls,
)

GOAL_MS = 2.0
TOOL_CALLS = 10


class TimedProvider(ProviderClient):
    """Adds up the time spent inside `complete` (the model's share of the turn)."""

    model_time = 0.0
    calls = 0

    async def complete(self, *args: Any, **kwargs: Any) -> ModelResponse:
        start = time.perf_counter()
        try:
            return await super().complete(*args, **kwargs)
        finally:
            self.model_time += time.perf_counter() - start
            self.calls += 1


class LookupArgs(BaseModel):
    key: str


async def lookup(args: LookupArgs, ctx: ToolContext) -> str:
    return f"value of {args.key}"


def responder(req: RecordedRequest) -> Script:
    last = req.messages[-1]
    if last.get("role") == "user":
        return tool_calls(*[call("lookup", {"key": f"k{i}"}) for i in range(TOOL_CALLS)])
    return text("Here is the answer based on the ten lookups.")


def history(n: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 4
    i = 0
    while len(msgs) < n:
        msgs.append({"role": "user", "content": f"question {i}: {filler}", "_id": i})
        if i % 3 == 0 and len(msgs) + 2 < n:
            cid = f"call_h{i}"
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function",
                 "function": {"name": "lookup", "arguments": '{"key": "x"}'}}]})
            msgs.append({"role": "tool", "tool_call_id": cid, "content": filler})
        msgs.append({"role": "assistant", "content": f"answer {i}: {filler}"})
        i += 1
    return msgs[:n]


async def measure(server: FakeOpenAIServer, size: int, turns: int) -> dict[str, float]:
    settings = ProviderSettings(name="bench", base_url=server.base_url, api_keys=["sk-bench"],
                                model="fake-model", timeout_s=30)
    provider = TimedProvider(settings)
    registry = ToolRegistry([Tool("lookup", "look a key up", LookupArgs, lookup,
                                  parallel_safe=True)])
    agent = Agent(ProviderRouter([provider]), registry, "You are a benchmark agent. " * 20,
                  config=AgentConfig())
    hist = history(size)
    per_call: list[float] = []
    total_wall = 0.0
    request_bodies: list[list[dict[str, Any]]] = []
    for turn in range(turns + 1):  # turn 0 warms up
        provider.model_time, provider.calls = 0.0, 0
        mark = len(server.requests)
        start = time.perf_counter()
        async for ev in agent.run_turn(hist, "what are the values?"):
            if isinstance(ev, Final):
                assert ev.text.startswith("Here is the answer"), ev.text
        wall = time.perf_counter() - start
        if turn == 0:
            continue
        total_wall += wall
        per_call.append((wall - provider.model_time) / provider.calls * 1000)
        request_bodies += [r.body["messages"] for r in server.requests[mark:]]
    await provider.aclose()

    # Baseline: bare SDK streaming calls with exactly the same message lists.
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-bench", max_retries=0,
                                timeout=30)
    start = time.perf_counter()
    for msgs in request_bodies:
        stream = await client.chat.completions.create(
            model="fake-model", messages=msgs, tools=registry.schemas(), stream=True,
            stream_options={"include_usage": True})
        async for _ in stream:
            pass
    bare = time.perf_counter() - start
    await client.close()
    return {
        "median_ms": statistics.median(per_call),
        "p90_ms": sorted(per_call)[int(0.9 * (len(per_call) - 1))],
        "loop_wall_s": total_wall,
        "bare_sdk_s": bare,
        "ratio": total_wall / bare if bare else float("nan"),
        "calls": len(request_bodies),
    }


async def main(quick: bool) -> int:
    turns = 5 if quick else 40
    async with FakeOpenAIServer(responder=responder) as server:
        print(f"agent loop overhead per model call ({TOOL_CALLS}-tool-call turn, "
              f"{turns} turns per size, instant in-process fake model)")
        worst = 0.0
        for size in (20, 200):
            r = await measure(server, size, turns)
            worst = max(worst, r["median_ms"]) if size == 200 else worst
            print(f"  history {size:>3}: overhead median {r['median_ms']:.3f} ms, "
                  f"p90 {r['p90_ms']:.3f} ms per model call | loop {r['loop_wall_s']:.3f} s vs "
                  f"bare SDK {r['bare_sdk_s']:.3f} s for {r['calls']} calls "
                  f"(ratio {r['ratio']:.2f}x)")
        verdict = "OK" if worst < GOAL_MS else "ABOVE GOAL"
        print(f"  goal < {GOAL_MS} ms per model call at 200 messages: {worst:.3f} ms -> {verdict}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few turns only (CI smoke run)")
    sys.exit(asyncio.run(main(parser.parse_args().quick)))
