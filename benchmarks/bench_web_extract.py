"""CPU cost of `web_extract` on a 2 MB page.

The page is served by a separate process on 127.0.0.1 (so its CPU does not count); this
process's CPU time (`time.process_time`, all threads: the fetch on the loop and the extraction
thread) is measured per call, median of N calls.

Pages (both 2 MB):
- `news`: a news article page as they come: ~130 KB of article text, navigation, and the rest
  inline scripts, styles and JSON state (the usual shape of a big page);
- `dense`: 2 MB of nothing but paragraphs (the worst case: all of it is text).

Same-run baselines, not through the code judged:
- `raw fetch`: a plain aiohttp GET reading the body (no address guard, no extraction);
- `trafilatura`: `trafilatura.extract(bytes, output_format="markdown")` called directly on the
  same bytes, its defaults (what a tool without our pre-pass would do).
Goal: `web_extract` < 150 ms CPU on the 2 MB page (`news`); `dense` is reported too.

    .venv/bin/python benchmarks/bench_web_extract.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp  # noqa: E402
import trafilatura  # noqa: E402

from agent_core.tools.base import ToolCall, ToolContext  # noqa: E402
from agent_core.tools.builtin.web_extract import WebFetchSettings, web_extract_tool  # noqa: E402
from agent_core.tools.registry import ToolRegistry  # noqa: E402
from agent_core.web.netguard import AddressPolicy, FetchLimits  # noqa: E402

GOAL_MS = 150.0
SIZE = 2_000_000


def news_page() -> bytes:
    article = "".join(
        f"<p>Paragraph {i} of the report names the harbour office, the council and "
        f"figure {i * 7}; see <a href='/rel/{i}'>the source</a> for details.</p>\n"
        for i in range(900))
    nav = "<nav>" + "".join(f"<a href='/s/{i}'>Section {i}</a>" for i in range(400)) + "</nav>"
    style = "<style>" + "".join(f".c{i}{{color:#333;margin:0 auto;padding:{i % 9}px}}\n"
                                for i in range(6000)) + "</style>"
    head = f"<html><head><title>Harbour news</title>{style}</head><body>{nav}<article><h1>Today</h1>"
    tail = "</article><footer>Harbour Gazette</footer></body></html>"
    used = len(head) + len(article) + len(tail) + 40
    state = '{"k":"' + "x" * 180 + '"},'
    script = ("<script>window.__STATE__=[" + state * ((SIZE - used) // len(state))
              + "null];</script>")
    return (head + article + script + tail).encode()


def dense_page() -> bytes:
    parts = ["<html><head><title>Dense</title></head><body><article><h1>All text</h1>"]
    size, i = 0, 0
    while size < SIZE - 200:
        p = f"<p>Sentence {i}: the quick brown fox jumps over the lazy dog near the harbour.</p>\n"
        parts.append(p)
        size += len(p)
        i += 1
    parts.append("</article></body></html>")
    return "".join(parts).encode()


SERVER = textwrap.dedent("""
    import sys
    from aiohttp import web
    pages = {"/news": open(sys.argv[1], "rb").read(), "/dense": open(sys.argv[2], "rb").read()}
    async def serve(request):
        return web.Response(body=pages[request.path], content_type="text/html")
    app = web.Application()
    app.router.add_get("/{p}", serve)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[3]), print=lambda *a: print("ready", flush=True))
""")


def cpu_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def measure(runs: int, base: str, pages: dict[str, bytes]) -> dict[str, dict[str, float]]:
    reg = ToolRegistry([web_extract_tool(WebFetchSettings(
        policy=AddressPolicy.of(["127.0.0.1/32"]),
        limits=FetchLimits(timeout_s=30, max_bytes=5_000_000), max_chars=20_000))])
    ctx = ToolContext(workspace=Path("/tmp"))
    out: dict[str, dict[str, float]] = {}
    for name, body in pages.items():
        url = f"{base}/{name}"
        tool, raw, traf = [], [], []
        for i in range(runs + 1):
            t = time.process_time()
            (res,) = await reg.execute([ToolCall(f"b{i}", "web_extract",
                                                 json.dumps({"urls": [url]}))], ctx)
            spent = time.process_time() - t
            assert res.ok and "Paragraph 1" in res.content or "Sentence 1" in res.content, res.content[:300]
            t = time.process_time()
            async with aiohttp.ClientSession() as s, s.get(url) as r:
                got = await r.read()
            raw_spent = time.process_time() - t
            assert len(got) == len(body)
            t = time.process_time()
            text = trafilatura.extract(body, output_format="markdown")
            traf_spent = time.process_time() - t
            assert text
            if i:  # the first run warms imports and caches
                tool.append(spent)
                raw.append(raw_spent)
                traf.append(traf_spent)
        out[name] = {"web_extract": cpu_ms(tool), "raw_fetch": cpu_ms(raw),
                     "trafilatura": cpu_ms(traf)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    runs = 3 if args.quick else 9
    tmp = Path("/tmp") / f"bench_web_extract_{int(time.time())}"
    tmp.mkdir()
    pages = {"news": news_page(), "dense": dense_page()}
    for name, body in pages.items():
        (tmp / f"{name}.html").write_bytes(body)
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(tmp / "news.html"),
                             str(tmp / "dense.html"), str(port)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and "ready" in proc.stdout.readline()
        results = asyncio.run(measure(runs, f"http://127.0.0.1:{port}", pages))
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"web_extract on 2 MB pages: median CPU ms over {runs} runs "
          "(this process, all threads; server in another process)")
    print(f"{'page':<7}{'bytes':>10}{'web_extract':>13}{'raw fetch':>11}{'trafilatura':>13}"
          f"{'ratio':>8}")
    for name, r in results.items():
        base = r["raw_fetch"] + r["trafilatura"]
        print(f"{name:<7}{len(pages[name]):>10}{r['web_extract']:>13.1f}{r['raw_fetch']:>11.1f}"
              f"{r['trafilatura']:>13.1f}{r['web_extract'] / base:>8.2f}")
    print("ratio = web_extract / (raw fetch + trafilatura called directly on the same bytes)")
    news = results["news"]["web_extract"]
    print(f"goal: web_extract < {GOAL_MS:.0f} ms CPU on the 2 MB page (news): "
          f"{news:.1f} ms -> {'met' if news < GOAL_MS else 'missed'}")
    dense = results["dense"]["web_extract"]
    print(f"worst case (dense, 2 MB of text): {dense:.1f} ms -> "
          f"{'met' if dense < GOAL_MS else 'missed'}")


if __name__ == "__main__":
    main()
