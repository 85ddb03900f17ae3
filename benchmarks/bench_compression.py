"""Benchmark: non-LLM CPU time of one compression (issue 4, deliverable 8).

Histories of 200, 1,000 and 5,000 messages with big tool outputs (about 5 KB per message on
average; every tenth tool result 8-80 KB). The summarizer answers instantly, so the figures are
the engine's own CPU time: pruning, boundaries, budgeting, rendering, redaction, assembly.

Printed per size: CPU time of one compression with a cold token cache (first time the engine
sees the messages) and with a warm one (the live session estimated them turn by turn), the
summarizer calls and prompt size per call (bounded by the auxiliary window), how many turns
were left out of the prompt, the cost of re-estimating the history after appending 10 messages
vs the first full estimate, and a same-run baseline: what the reference does (estimate by
re-serializing everything, then redact and serialize the whole middle into one prompt).

Timing: median (and best) process CPU time (`time.process_time`, so time spent waiting for a
core on a busy machine does not count) of runs driven by `run_until_complete` on ONE event loop, as in
the gateway's compression pool. Running each compression through `asyncio.run` (or
`asyncio.Runner.run`) made the allocator give memory back and fault ~300 pages in again on
every run here (~2 ms at 200 messages, visible in `ru_minflt`): harness cost, not engine work.

Usage: .venv/bin/python benchmarks/bench_compression.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_core.compression import CompressionSettings, ContextCompressor  # noqa: E402
from agent_core.tokens import TOKEN_CACHE_KEY, TokenTally, estimate_messages  # noqa: E402
from hermes_common.redact import redact  # noqa: E402

REFERENCE_MS = {200: 17, 1000: 98, 5000: 511}
GOAL_MS = {200: 4, 1000: 25, 5000: 120}
WORDS = (
    "the build failed because config value server client request response timeout retry "
    "module import error warning passed test deploy cache token file path line column "
    "function return status json yaml docker compose port host user session"
).split()


class InstantSummarizer:
    calls = 0

    async def summarize(self, messages: list[dict[str, Any]], *, max_tokens: int) -> str:
        self.calls += 1
        return "## Historical Task Snapshot\nNone.\n## Goal\nbenchmark\n## Completed Actions\n1. ok"


def _text(rnd: random.Random, size: int) -> str:
    line = " ".join(rnd.choice(WORDS) for _ in range(14)) + "\n"
    block = "".join(line if i % 7 else f'{{"status": "ok", "line": {i}}}\n' for i in range(40))
    return (block * (size // len(block) + 1))[:size]


def build_history(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """user, assistant with 2 tool calls, 2 tool results, assistant answer; ~5 KB/message."""
    rnd = random.Random(seed)
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are Hermes. " * 40}]
    turn = results = 0
    while len(msgs) < n:
        msgs.append({"role": "user", "content": _text(rnd, rnd.randint(100, 700))})
        calls = []
        for k in range(2):
            args = {"command": f"pytest tests/test_{turn}_{k}.py -q", "workdir": "/srv/app"}
            calls.append(
                {
                    "id": f"call_{turn}_{k}",
                    "type": "function",
                    "function": {"name": "terminal", "arguments": json.dumps(args)},
                }
            )
        msgs.append({"role": "assistant", "content": "Running the tests.", "tool_calls": calls})
        for k in range(2):
            results += 1
            size = rnd.randint(8_000, 80_000) if results % 10 == 0 else rnd.randint(2_000, 15_000)
            body = _text(rnd, size) + f"\nexit_code: {rnd.choice([0, 0, 0, 1])}"
            msgs.append({"role": "tool", "tool_call_id": f"call_{turn}_{k}", "content": body})
        msgs.append({"role": "assistant", "content": _text(rnd, rnd.randint(200, 1200))})
        turn += 1
    while msgs[-1]["role"] == "tool" or msgs[-1].get("tool_calls"):
        msgs.pop()
    return msgs


def _clear_cache(msgs: list[dict[str, Any]]) -> None:
    for m in msgs:
        m.pop(TOKEN_CACHE_KEY, None)


def baseline(msgs: list[dict[str, Any]]) -> int:
    """What the reference does, with this engine's own (fast) redaction: estimate tokens by
    serializing every message, then redact every middle message in full and serialize it
    (capped at 4,000 + 1,500 chars per message) into one prompt. Returns the prompt size."""
    tokens = sum(len(json.dumps(m, ensure_ascii=False)) // 4 for m in msgs)
    parts = []
    for m in msgs[4 : len(msgs) - 20]:
        text = redact(m.get("content") or "")
        if len(text) > 6000:
            text = text[:4000] + "\n...[truncated]...\n" + text[-1500:]
        parts.append(f"[{m['role'].upper()}]: {text}")
    return len("\n\n".join(parts)) + 0 * tokens


def _samples(fn: Any, repeat: int, before: Any = None) -> list[float]:
    """CPU milliseconds of `repeat` calls of `fn()`; `before()` runs untimed ahead of each."""
    samples = []
    for _ in range(repeat):
        if before is not None:
            before()
        t = time.process_time()
        fn()
        samples.append((time.process_time() - t) * 1000)
    return samples


def _time(fn: Any, repeat: int, before: Any = None) -> float:
    """Median CPU milliseconds of `fn()`."""
    return statistics.median(_samples(fn, repeat, before))


def run(sizes: list[int], repeat: int) -> None:
    settings = CompressionSettings(aux_context_length=64_000)
    print(f"{'msgs':>6} {'avg KB':>6} {'cold ms':>8} {'(best)':>6} {'warm ms':>8} {'goal':>5} "
          f"{'ref':>5} "
          f"{'base ms':>8} {'x base':>6} {'calls':>5} {'prompt chars/call':>17} {'~tok':>6} "
          f"{'left out':>8}")
    per_msg = []
    loop = asyncio.new_event_loop()
    try:
        for n in sizes:
            msgs = build_history(n)
            avg_kb = sum(len(m.get("content") or "") for m in msgs) / len(msgs) / 1024
            engine = ContextCompressor(
                InstantSummarizer(), context_length=200_000, settings=settings, offload_at=10**9
            )

            def once(msgs: list[dict[str, Any]] = msgs, engine: ContextCompressor = engine) -> Any:
                return loop.run_until_complete(engine.compress(msgs))

            _clear_cache(msgs)
            result = once()
            cold = _samples(once, repeat, before=lambda msgs=msgs: _clear_cache(msgs))
            cold_ms = statistics.median(cold)
            estimate_messages(msgs)
            warm_ms = _time(once, repeat)
            base_ms = _time(lambda msgs=msgs: baseline(msgs), max(1, repeat // 2))
            per_msg.append(cold_ms / n)
            print(
                f"{n:>6} {avg_kb:>6.1f} {cold_ms:>8.1f} {min(cold):>6.1f} {warm_ms:>8.1f} "
                f"{GOAL_MS.get(n, '-'):>5} "
                f"{REFERENCE_MS.get(n, '-'):>5} {base_ms:>8.1f} {base_ms / cold_ms:>6.1f} "
                f"{result.summarizer_calls:>5} {result.summarizer_prompt_chars:>17,} "
                f"{result.summarizer_prompt_tokens:>6,} {result.details['omitted_from_prompt']:>8,}"
            )
            assert result.status == "compressed", result.reason
            assert result.summarizer_prompt_tokens + result.details["summary_budget"] <= (
                settings.aux_context_length
            ), "summarizer prompt must fit the auxiliary window"
    finally:
        loop.close()
    print(f"linearity: CPU per message at each size = "
          f"{', '.join(f'{x * 1000:.1f}us' for x in per_msg)}")
    base_prompt = baseline(build_history(sizes[-1]))
    print(f"baseline prompt at {sizes[-1]} messages: {base_prompt:,} chars in ONE call "
          f"(auxiliary window here: {settings.aux_context_length:,} tokens)")

    msgs = build_history(sizes[-1])
    _clear_cache(msgs)
    tally = TokenTally()
    first = _time(lambda: tally.estimate(msgs), 1)
    extra = build_history(14, seed=99)[1:11]
    msgs += extra
    second = _time(lambda: tally.estimate(msgs), 1)
    rescan = _time(lambda: estimate_messages(msgs), 3)
    naive = _time(lambda: sum(len(json.dumps(m, ensure_ascii=False)) // 4 for m in msgs), 1)
    print(
        f"token estimate at {len(msgs)} messages: first {first:.2f} ms; after appending 10: "
        f"{second:.3f} ms with TokenTally ({first / max(second, 1e-3):.0f}x cheaper), "
        f"{rescan:.2f} ms re-walking the per-message cache; naive re-serialize {naive:.1f} ms "
        f"({naive / max(first, 1e-6):.1f}x the first estimate)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repetition")
    args = parser.parse_args()
    if args.quick:
        run([200, 1000], repeat=3)
    else:
        run([200, 1000, 5000], repeat=9)


if __name__ == "__main__":
    main()
