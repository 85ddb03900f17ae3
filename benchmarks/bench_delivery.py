"""Cost of splitting + formatting a 50 KB reply for each platform dialect.

Run: .venv/bin/python benchmarks/bench_delivery.py [--quick]

Prints, per dialect, the median time of `render_parts` (Markdown → dialect, split to the
platform limit) and of `split_message` alone, with ratios against baselines measured in the
same run: a naive `textwrap.wrap` split of the same text, and markdown-it-py's own HTML
render (the parser floor any AST-based converter pays). Goal from issue 6: < 5 ms per 50 KB.

The streaming-consumer-per-token figure (goal < 20 µs/token) needs the gateway's streaming
consumer, which does not exist yet: see `bench_streaming_consumer` (TODO hook).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from markdown_it import MarkdownIt  # noqa: E402

from adapters._text import render_parts, split_message  # noqa: E402

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


def bench_streaming_consumer(quick: bool) -> None:
    """TODO(delivery streaming consumer): once gateway's streaming consumer exists, feed it
    ~10,000 tokens through a FakeAdapter with a ManualClock and report µs per token against
    a baseline of plain string concatenation. Goal: < 20 µs per streamed token."""
    print("streaming consumer per token: TODO - the gateway streaming consumer does not exist "
          "yet (hook: bench_streaming_consumer)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few runs, finishes in seconds")
    args = parser.parse_args()
    runs = 3 if args.quick else 15
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
    for dialect, measure, limit in DIALECTS:
        ms = median_ms(
            lambda d=dialect, m=measure, lim=limit: render_parts(
                reply, dialect=d, limit=lim, measure=m  # type: ignore[arg-type]
            ),
            runs,
        )
        parts = len(render_parts(reply, dialect=dialect, limit=limit, measure=measure))  # type: ignore[arg-type]
        print(f"render_parts {dialect:<22} : {ms:8.2f} ms  x{ms / naive:5.2f} vs textwrap  "
              f"x{ms / parser_floor:5.2f} vs markdown-it  ({parts} parts, goal < 5 ms)")
    bench_streaming_consumer(args.quick)


if __name__ == "__main__":
    main()
