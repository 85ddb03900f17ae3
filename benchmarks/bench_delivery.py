"""Cost of splitting + formatting a 50 KB reply for each platform dialect.

Run: .venv/bin/python benchmarks/bench_delivery.py [--quick]

Prints, per dialect, the median time of `render_parts` (Markdown → dialect, split to the
platform limit) and of `split_message` alone, with ratios against baselines measured in the
same run: a naive `textwrap.wrap` split of the same text, markdown-it-py's own HTML render
(the pure-Python parser floor), and `render_parts` with the markdown-it-py walker instead of
the pyromark one (the "before" of the fast path). Goal from issue 6: < 5 ms per 50 KB.

Then the streaming consumer per token (goal < 20 µs/token): `on_delta` alone and with the
flusher's amortized edits against a FakeAdapter whose edits are instant, against a baseline of
appending to a list and yielding to the event loop (the floor of any streaming consumer).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from markdown_it import MarkdownIt  # noqa: E402

from adapters.fake import FakeAdapter  # noqa: E402
from gateway.delivery.render import preview_text  # noqa: E402
from gateway.delivery.stream import StreamConsumer, StreamSettings  # noqa: E402
from gateway.ratelimit import BudgetSpec, ChatRateBudget  # noqa: E402
from hermes_common.text import markdown, render_parts, split_message  # noqa: E402

DIALECTS = [
    ("telegram_html", "utf16", 4_096),
    ("telegram_markdown_v2", "utf16", 4_096),
    ("slack_mrkdwn", "chars", 3_000),
    ("discord", "chars", 2_000),
    ("plain", "utf16", 4_096),
]


def build_reply(size: int = 50_000) -> str:
    section = (
        "## Results 🚀\n\n"
        "The run finished with **3 warnings** and *no errors*; see [the log](https://ex.com/"
        "log?id=42&v=2) for details. Values like `x < y && y > z` matter 👍🏽.\n\n"
        "- first item with a [link](https://example.org/a_b)\n"
        "- second item 2 * 3 = 6\n"
        "  - nested item with `code`\n"
        "1. step one\n2. step two\n\n"
        "> A quoted remark, with emphasis on *this*.\n\n"
        "```python\n"
        "def handler(event: dict) -> str:\n"
        "    if event.get('type') == \"message\" and len(event) > 2:\n"
        "        return f\"ok {event['id']}\"  # 😀\n"
        "    return 'skip'\n"
        "```\n\n"
    )
    out = []
    total = 0
    while total < size:
        out.append(section)
        total += len(section)
    return "".join(out)[:size]


def median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1_000)
    return statistics.median(samples)


async def _stream_run(tokens: list[str], burst: int | None) -> tuple[float, int]:
    """Feed `tokens` to a StreamConsumer (edit interval 0) on a FakeAdapter whose edits are
    instant, yielding to the event loop after every `burst` tokens, as when one network read
    brings several stream events: the flusher then edits at most once per burst, so `burst`
    tokens share one edit's cost (at a 1 s interval and ~50 tokens/s, burst ~ 50).
    `burst=None` calls on_delta only (the flusher never runs). Returns (seconds, edits)."""
    caps = FakeAdapter("bench").capabilities
    adapter = FakeAdapter("bench")
    consumer = StreamConsumer(
        adapter, chat_id="c1", thread_id=None, reply_to=None,
        budget=ChatRateBudget(BudgetSpec(())),
        preview=lambda text: preview_text(text, caps),
        settings=StreamSettings(edit_interval_s=0.0),
    )
    t0 = time.perf_counter()
    if burst is None:
        for tok in tokens:
            consumer.on_delta(tok)
    else:
        for i, tok in enumerate(tokens, 1):
            consumer.on_delta(tok)
            if i % burst == 0:
                await asyncio.sleep(0)
    await consumer.stop_streaming()
    return time.perf_counter() - t0, consumer.edits


async def _baseline_run(tokens: list[str]) -> float:
    """The floor: append each token to a list and yield to the loop, nothing else."""
    acc: list[str] = []
    t0 = time.perf_counter()
    for tok in tokens:
        acc.append(tok)
        await asyncio.sleep(0)
    "".join(acc)
    return time.perf_counter() - t0


def bench_streaming_consumer(quick: bool) -> None:
    """µs per streamed token through the gateway's StreamConsumer: `on_delta` alone, then
    on_delta + the flusher's amortized edits (preview render + FakeAdapter edit) with one
    edit per 1, 10 or 50 tokens (1 is the worst case). Goal: < 20 µs/token."""
    n = 2_000 if quick else 10_000
    words = ["Hello", " world", ",", " this", " is", " a", " streamed", " token", "."]
    tokens = [words[i % len(words)] for i in range(n)]
    runs = 3 if quick else 5

    def best(coro_fn: Callable[[], Any]) -> Any:
        return min((asyncio.run(coro_fn()) for _ in range(runs)), key=lambda r: r[0]
                   if isinstance(r, tuple) else r)

    base = best(lambda: _baseline_run(tokens)) / n * 1e6
    print(f"streaming {n:,} tokens: baseline append+yield   : {base:8.2f} µs/token")
    delta, _ = best(lambda: _stream_run(tokens, None))
    print(f"StreamConsumer.on_delta only                  : {delta / n * 1e6:8.2f} µs/token")
    for burst in (1, 10, 50):
        secs, edits = best(lambda b=burst: _stream_run(tokens, b))
        per = secs / n * 1e6
        print(f"on_delta + flush, one edit per {burst:2d} token(s)   : {per:8.2f} µs/token  "
              f"x{per / base:5.2f} vs baseline  ({edits} edits, goal < 20 µs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few runs, finishes in seconds")
    args = parser.parse_args()
    runs = 7 if args.quick else 25
    reply = build_reply()
    print(f"reply: {len(reply):,} chars, {runs} runs per figure (median)")

    naive = median_ms(lambda: textwrap.wrap(reply, 4_096, replace_whitespace=False), runs)
    parser_floor = median_ms(
        lambda: MarkdownIt("commonmark").enable("strikethrough").render(reply), runs
    )
    split_only = median_ms(lambda: split_message(reply, limit=4_096), runs)
    print(f"baseline textwrap.wrap split        : {naive:8.2f} ms")
    print(f"baseline markdown-it HTML render    : {parser_floor:8.2f} ms")
    print(f"split_message (source, utf16)       : {split_only:8.2f} ms  "
          f"x{split_only / naive:5.2f} vs textwrap")
    print(f"Markdown parser in use: {markdown.BACKEND}")
    for dialect, measure, limit in DIALECTS:
        def run(d: str = dialect, m: str = measure, lim: int = limit) -> list[str]:
            return render_parts(reply, dialect=d, limit=lim, measure=m)  # type: ignore[arg-type]

        ms = median_ms(run, runs)
        parts = len(run())
        ref = ""
        if markdown.BACKEND != "markdown-it-py" and dialect != "discord":
            fast_backend = markdown.BACKEND
            markdown.BACKEND = "markdown-it-py"  # the pure-Python reference walker
            try:
                ref_ms = median_ms(run, max(1, runs // 3))
            finally:
                markdown.BACKEND = fast_backend
            ref = f"  x{ms / ref_ms:5.2f} vs markdown-it-py walker ({ref_ms:6.2f} ms)"
        print(f"render_parts {dialect:<22} : {ms:8.2f} ms  x{ms / naive:5.2f} vs textwrap  "
              f"x{ms / parser_floor:5.2f} vs markdown-it HTML{ref}  ({parts} parts, goal < 5 ms)")
    bench_streaming_consumer(args.quick)


if __name__ == "__main__":
    main()
