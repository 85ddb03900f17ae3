"""The dashboard's cost (issue 19): page render time with 10,000 sessions stored, and what
an enabled dashboard adds to a turn.

Run: .venv/bin/python benchmarks/bench_dashboard.py [--quick]

1. Pages. A state.db with 10,000 sessions (two messages and token usage each, started over
   the last 14 days) behind a real `DashboardServer` on 127.0.0.1; each page is fetched over
   HTTP (aiohttp client, same loop) REPS times after a warm-up; the overview also with the
   store's aggregates (usage per day, session count; cached 10 s) re-read on every fetch. Baseline in the same run: a
   bare aiohttp handler on the same loop answering a pre-rendered body of the overview's size
   (the HTTP round trip, none of our code). Goal: every page < 50 ms (median).
2. Turn overhead. The real `GatewayRunner` in this process with the in-memory fake adapter and
   the fake OpenAI model; TURNS sequential turns (event injected → turn completed) with the
   dashboard off, then on with a browser-like poller fetching the overview every 2 s, in
   alternating blocks. Baseline: the same turns with the dashboard off. Goal: the median turn
   with the dashboard on is < 1 ms slower.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402

from adapters.fake import FakeAdapter  # noqa: E402
from gateway.dashboard import DashboardServer, DashboardSources  # noqa: E402
from gateway.eventloop import run as run_loop  # noqa: E402
from storage import StateStore  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer  # noqa: E402
from tests.gateway.runtime_harness import runner_for  # noqa: E402

SESSIONS = 10_000
GOAL_PAGE_MS = 50.0
GOAL_TURN_MS = 1.0
WORDS = ["zebra", "harbour", "lantern", "orbit", "meadow", "copper", "violet", "glacier"]


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * 0.95))]


async def seed(store: StateStore, n: int) -> str:
    now = time.time()
    last = ""

    async def one(i: int) -> str:
        s = await store.create_session(
            source="fake", user_id=f"u{i % 500}", session_key=f"fake:dm:c{i}",
            chat_id=f"c{i}", chat_type="dm", started_at=now - (i % 14) * 86400 - i)
        w = WORDS[i % len(WORDS)]
        await store.append_messages(s.id, [
            {"role": "user", "content": f"tell me about the {w} number {i}"},
            {"role": "assistant", "content": f"The {w} {i} is a fine thing to ask about."}])
        await store.add_usage(s.id, input_tokens=100 + i % 50, output_tokens=20 + i % 7)
        return s.id

    for start in range(0, n, 500):
        ids = await asyncio.gather(*(one(i) for i in range(start, min(n, start + 500))))
        last = ids[-1]
    return last


async def timed_get(http: aiohttp.ClientSession, url: str, reps: int,
                    before: Any = None) -> tuple[list[float], int]:
    for _ in range(3):
        async with http.get(url) as r:
            body = await r.read()
            assert r.status == 200, (url, r.status)
    out = []
    for _ in range(reps):
        if before is not None:
            before()
        t = time.perf_counter()
        async with http.get(url) as r:
            body = await r.read()
        out.append((time.perf_counter() - t) * 1000)
    return out, len(body)


async def pages(reps: int, n: int) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        store = await StateStore.open(Path(tmp) / "state.db")
        t = time.perf_counter()
        sid = await seed(store, n)
        print(f"seeded {n:,} sessions in {time.perf_counter() - t:.1f} s")

        async def sessions() -> dict[str, Any]:
            return {"active": 0, "queues": 0, "queued": 0, "held": 0}

        server = DashboardServer(DashboardSources(
            store=store, adapters=list, sessions=sessions,
            compression=lambda: {"enabled": True, "mode": "rotate", "workers": 2, "queued": 0,
                                 "running": [], "outcomes": {"compressed": 3}},
            version="bench"), port=0)
        await server.start()
        base = server.url.rstrip("/")
        urls = {"overview": "/", "overview fragment": "/fragment/overview",
                "sessions": "/sessions", "search": "/sessions?q=zebra",
                "session": f"/sessions/{sid}", "pairing": "/pairing"}
        ok = True
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            results = {name: await timed_get(http, base + path, reps)
                       for name, path in urls.items()}

            def cold() -> None:
                server._aggregates = None  # the store's aggregates re-read on this fetch

            results["overview, aggregates re-read"] = await timed_get(http, base + "/", reps,
                                                                      before=cold)
            size = results["overview"][1]
            payload = b"x" * size

            async def static(_: web.Request) -> web.Response:
                return web.Response(body=payload, content_type="text/html")

            app = web.Application()
            app.router.add_get("/", static)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = runner.addresses[0][1]
            baseline, _ = await timed_get(http, f"http://127.0.0.1:{port}/", reps)
            await runner.cleanup()
        await server.stop()
        await store.close()
    b = med(baseline)
    print(f"\nPages with {n:,} sessions stored ({reps} fetches each, ms):")
    print(f"  {'baseline (static body)':24} median {b:6.2f}  p95 {p95(baseline):6.2f}")
    for name, (xs, nbytes) in results.items():
        m = med(xs)
        met = m < GOAL_PAGE_MS
        ok &= met
        print(f"  {name:24} median {m:6.2f}  p95 {p95(xs):6.2f}  ratio {m / b:5.1f}x  "
              f"{nbytes / 1024:5.1f} KiB  goal < {GOAL_PAGE_MS:.0f} ms: "
              f"{'met' if met else 'MISSED'}")
    return ok


async def turn_block(turns: int, dashboard: bool, tmp: Path) -> list[float]:
    model_overrides: dict[str, Any] = {"dashboard__enabled": dashboard}
    out: list[float] = []
    async with FakeOpenAIServer() as model, \
            runner_for(tmp, model, **model_overrides) as (runner, fake):
        assert isinstance(fake, FakeAdapter)
        stop = asyncio.Event()
        poller = None
        if dashboard:
            assert runner.dashboard is not None
            url = runner.dashboard.url + "fragment/overview"

            async def poll() -> None:
                async with aiohttp.ClientSession() as http:
                    while not stop.is_set():
                        async with http.get(url) as r:
                            await r.read()
                        try:
                            await asyncio.wait_for(stop.wait(), 2.0)
                        except TimeoutError:
                            pass

            poller = asyncio.create_task(poll(), name="bench-dashboard-poller")
        for i in range(turns + 5):
            done = len(fake.turns_completed)
            t = time.perf_counter()
            await fake.inject(f"message {i}", chat_id=f"c{i % 20}", user_id="u1")
            await fake.wait_for(lambda d=done: len(fake.turns_completed) > d, 10)
            if i >= 5:
                out.append((time.perf_counter() - t) * 1000)
        stop.set()
        if poller is not None:
            await poller
    return out


async def turns(n: int, blocks: int) -> bool:
    off: list[float] = []
    on: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for b in range(blocks):
            off += await turn_block(n, False, Path(tmp) / f"off{b}")
            on += await turn_block(n, True, Path(tmp) / f"on{b}")
    m_off, m_on = med(off), med(on)
    added = m_on - m_off
    met = added < GOAL_TURN_MS
    print(f"\nTurn (event → turn completed), {len(off)} turns each, ms:")
    print(f"  dashboard off (baseline) median {m_off:6.2f}  p95 {p95(off):6.2f}")
    print(f"  dashboard on + poller    median {m_on:6.2f}  p95 {p95(on):6.2f}  "
          f"ratio {m_on / m_off:4.2f}x")
    print(f"  added per turn: {added:+.2f} ms  goal < {GOAL_TURN_MS:.0f} ms: "
          f"{'met' if met else 'MISSED'}")
    return met


async def main(quick: bool) -> int:
    ok = await pages(reps=10 if quick else 40, n=2_000 if quick else SESSIONS)
    ok &= await turns(n=40 if quick else 150, blocks=2 if quick else 3)
    return 0 if ok else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    raise SystemExit(run_loop(main(ap.parse_args().quick)))
