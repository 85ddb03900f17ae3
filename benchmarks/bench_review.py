"""Benchmark: does the background self-review delay the user's reply? (issue 17)

Two real gateways in one process, each behind the `api` adapter and talking to its own fake
model: one with `skills.review.enabled: false` (the same-run baseline), one with reviews on
and every turn due one (5 tool calls, `skills.review.min_tool_calls: 5`). The review's model
calls are slow on purpose (each review request is answered after `REVIEW_DELAY_S`), so a
review is always in flight, or queued, while the next replies are produced. Turns alternate
between the two gateways so both see the same machine load.

Measured: the wall time from sending the request (the `openai` SDK, non-streaming) to having
the reply, per turn; median and p90 of each gateway, and the difference of the medians.
Goal: the median with reviews is within 10 % (or 5 ms) of the baseline's.

    .venv/bin/python benchmarks/bench_review.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from openai import AsyncOpenAI  # noqa: E402

from adapters.api.adapter import ApiAdapter  # noqa: E402
from agent_core.skills.review import REVIEW_HEADING  # noqa: E402
from gateway.paths import ProfilePaths, ensure_profile_dirs  # noqa: E402
from gateway.runner import GatewayRunner  # noqa: E402
from tests.fakes.openai_server import (  # noqa: E402
    FakeOpenAIServer,
    RecordedRequest,
    Script,
    call,
    text,
    tool_calls,
)
from tests.integration.harness import make_config  # noqa: E402

KEY = "sk-bench-0123456789abcdef"
REVIEW_DELAY_S = 0.5
GOAL_RATIO = 1.10
GOAL_SLACK_MS = 5.0


def _responder(reviews: list[float]) -> Any:
    turn_step: dict[int, int] = {}

    async def respond(req: RecordedRequest) -> Script:
        first = req.messages[0] if req.messages else {}
        if str(first.get("content", "")).startswith(REVIEW_HEADING):
            reviews.append(time.monotonic())
            await asyncio.sleep(REVIEW_DELAY_S)
            return text("Nothing to save.")
        if req.messages[-1].get("role") == "tool":
            return text("Done.")
        n = turn_step[0] = turn_step.get(0, 0) + 1
        return tool_calls(*(call("write_file", {"path": f"t{n}/{i}.txt", "content": "x\n"})
                            for i in range(5)))

    return respond


async def _gateway(home: Path, model: FakeOpenAIServer, review: bool
                   ) -> tuple[GatewayRunner, AsyncOpenAI]:
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY]})
    cfg = make_config(model, compression__enabled=False, skills__review__enabled=review,
                      logging__level="WARNING")
    runner = GatewayRunner(cfg, ensure_profile_dirs(ProfilePaths(home)),
                           adapters={"api": adapter}, health_port=0, take_locks=False)
    await runner.start()
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{adapter.port}/v1", api_key=KEY,
                         max_retries=0, timeout=60)
    return runner, client


async def _ask(client: AsyncOpenAI, i: int) -> float:
    started = time.perf_counter()
    await client.chat.completions.create(
        model="hermes-agent", user=f"s{i % 4}",
        messages=[{"role": "user", "content": f"set up part {i}"}])
    return (time.perf_counter() - started) * 1000


def _p90(xs: list[float]) -> float:
    return sorted(xs)[max(0, int(len(xs) * 0.9) - 1)]


async def main(turns: int) -> int:
    reviews_seen: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeOpenAIServer(responder=_responder([])) as m_off, \
                FakeOpenAIServer(responder=_responder(reviews_seen)) as m_on:
            off = await _gateway(Path(tmp) / "off", m_off, review=False)
            on = await _gateway(Path(tmp) / "on", m_on, review=True)
            try:
                for i in range(3):  # warm-up
                    await _ask(off[1], i)
                    await _ask(on[1], i)
                lat_off: list[float] = []
                lat_on: list[float] = []
                for i in range(turns):
                    lat_off.append(await _ask(off[1], i))
                    lat_on.append(await _ask(on[1], i))
                records = await on[0].store.list_reviews(limit=10_000)
            finally:
                for runner, client in (off, on):
                    await client.close()
                    await runner.shutdown()
    med_off, med_on = statistics.median(lat_off), statistics.median(lat_on)
    statuses: dict[str, int] = {}
    for r in records:
        key = r.status if r.status != "skipped" else f"skipped:{r.reason}"
        statuses[key] = statuses.get(key, 0) + 1
    print(f"turns per gateway: {turns} (5 tool calls each; a review is due after every one)")
    print(f"reviews: {len(reviews_seen)} model requests held {REVIEW_DELAY_S:g} s each; "
          f"records {statuses}")
    print(f"reply latency, reviews off (baseline): median {med_off:.1f} ms, "
          f"p90 {_p90(lat_off):.1f} ms")
    print(f"reply latency, reviews on:             median {med_on:.1f} ms, "
          f"p90 {_p90(lat_on):.1f} ms")
    delta = med_on - med_off
    ok = med_on <= max(med_off * GOAL_RATIO, med_off + GOAL_SLACK_MS)
    print(f"difference of medians: {delta:+.1f} ms ({med_on / med_off:.2f}x); goal "
          f"<= +10 % or +{GOAL_SLACK_MS:g} ms: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(20 if args.quick else 60)))
