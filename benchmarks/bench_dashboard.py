"""The dashboard's cost (issue 19): page render time with 10,000 sessions stored, and what
an enabled dashboard adds to a turn.

Run: .venv/bin/python benchmarks/bench_dashboard.py [--quick]

1. Pages. A state.db with 10,000 sessions (two messages and token usage each, started over
   the last 14 days) plus one long session (LONG messages with tool calls, three compression
   ancestors, a compression child and two branches) behind a real `DashboardServer` on
   127.0.0.1; each page is fetched over HTTP (aiohttp client, same loop) REPS times after a
   warm-up; the overview also with the store's usage per day (a sum over every session of
   14 days) re-read on every fetch (it is re-read every 10 s; between reads the overview
   adds the turn layer's counters). Baseline in the same run: a bare aiohttp handler on the
   same loop answering a pre-rendered body of the overview's size (the HTTP round trip, none
   of our code). Goal: every page < 50 ms (median).
2. Turn overhead. Two real `GatewayRunner`s in this process (the in-memory fake adapter, the
   fake OpenAI model, INFO logs to /dev/null), both with SESSIONS sessions stored: one with
   the dashboard off, one with it on. Sequential turns (event injected → turn completed) in
   blocks that rotate through four conditions, ROUNDS times: off (the baseline); on, nobody
   looking; on with a poller fetching the overview fragment at a fixed FETCH_HZ for the whole
   block (20 times a browser tab's rate); off again (an A/A pair: how much two blocks of the
   same gateway differ on this machine, the floor under any figure above).
   Goal: the median turn with the dashboard on and polled is < 1 ms slower than off.
"""

from __future__ import annotations

import argparse
import asyncio
import os
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
from gateway.dashboard.server import AGGREGATES_TTL_S  # noqa: E402
from gateway.eventloop import run as run_loop  # noqa: E402
from gateway.logging import configure_logging  # noqa: E402
from gateway.runner import GatewayRunner  # noqa: E402
from storage import StateStore  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer  # noqa: E402
from tests.gateway.runtime_harness import runner_for  # noqa: E402

SESSIONS = 10_000
LONG = 3_000          # messages of the long session (the page shows the last 500)
FETCH_HZ = 10.0       # the poller's rate during "on + poller" blocks (a browser tab: 0.5)
GOAL_PAGE_MS = 50.0
GOAL_TURN_MS = 1.0
WORDS = ["zebra", "harbour", "lantern", "orbit", "meadow", "copper", "violet", "glacier"]


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * 0.95))]


async def seed(store: StateStore | Any, n: int) -> str:
    """`n` short sessions over the last 14 days; returns the last id."""
    now = time.time()
    last = ""

    async def one(i: int) -> str:
        s = await store.create_session(
            source="fake", user_id=f"u{i % 500}", session_key=f"seed:dm:c{i}",
            chat_id=f"c{i}", chat_type="dm", started_at=now - (i % 14) * 86400 - i)
        w = WORDS[i % len(WORDS)]
        await store.append_messages(s.id, [
            {"role": "user", "content": f"tell me about the {w} number {i}"},
            {"role": "assistant", "content": f"The {w} {i} is a fine thing to ask about."}])
        await store.add_usage(s.id, input_tokens=100 + i % 50, output_tokens=20 + i % 7)
        return str(s.id)

    for start in range(0, n, 500):
        ids = await asyncio.gather(*(one(i) for i in range(start, min(n, start + 500))))
        last = ids[-1]
    return last


async def seed_long(store: StateStore, messages: int) -> str:
    """A session with `messages` messages (a third of the turns call a tool), three
    compression ancestors, a compression child and two branches; returns its id."""
    parent = None
    for depth in range(3):
        a = await store.create_session(source="fake", user_id="u1", session_key="long:dm:c1",
                                       chat_id="c1", chat_type="dm", title=f"Long trip {depth}",
                                       parent_session_id=parent,
                                       lineage_kind="compression" if parent else None)
        await store.append_messages(a.id, [{"role": "user", "content": f"part {depth}"}])
        await store.end_session(a.id, "compression")
        parent = a.id
    s = await store.create_session(source="fake", user_id="u1", session_key="long:dm:c1",
                                   chat_id="c1", chat_type="dm", title="Long trip",
                                   parent_session_id=parent, lineage_kind="compression")
    batch: list[dict[str, Any]] = []
    written = turn = 0
    while written + len(batch) < messages:
        w = WORDS[turn % len(WORDS)]
        batch.append({"role": "user", "content": f"plan day {turn} around the {w} " * 4})
        if turn % 3 == 0:
            call = {"id": f"call{turn}", "type": "function", "function": {
                "name": "read_file", "arguments": f'{{"path": "notes/{w}-{turn}.md"}}'}}
            batch.append({"role": "assistant", "content": None, "tool_calls": [call]})
            batch.append({"role": "tool", "tool_call_id": f"call{turn}",
                          "tool_name": "read_file",
                          "content": f"notes/{w}-{turn}.md — lines 1-3 of 3\n1|{w}\n2|x\n3|y"})
        batch.append({"role": "assistant", "content": f"Day {turn}: the **{w}** first. " * 6})
        turn += 1
        if len(batch) >= 200:
            await store.append_messages(s.id, batch)
            written, batch = written + len(batch), []
    if batch:
        await store.append_messages(s.id, batch)
    await store.add_usage(s.id, input_tokens=90_000, output_tokens=12_000)
    await store.end_session(s.id, "compression")
    await store.create_session(source="fake", user_id="u1", session_key="long:dm:c1",
                               chat_id="c1", chat_type="dm", parent_session_id=s.id,
                               lineage_kind="compression")
    for b in range(2):
        await store.create_session(source="fake", user_id="u1", session_key=f"long:dm:b{b}",
                                   chat_id="c1", chat_type="dm", parent_session_id=s.id,
                                   lineage_kind="branch")
    return str(s.id)


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
        long_sid = await seed_long(store, LONG)
        print(f"seeded {n:,} sessions and one of {LONG:,} messages with its lineage in "
              f"{time.perf_counter() - t:.1f} s")
        skew = [0.0]  # moved past the aggregates' TTL to force a re-read of the store

        async def sessions() -> dict[str, Any]:
            return {"active": 0, "queues": 0, "queued": 0, "held": 0}

        server = DashboardServer(DashboardSources(
            store=store, adapters=list, sessions=sessions,
            compression=lambda: {"enabled": True, "mode": "rotate", "workers": 2, "queued": 0,
                                 "running": [], "outcomes": {"compressed": 3}},
            version="bench"), port=0, clock=lambda: time.time() + skew[0])
        await server.start()
        base = server.url.rstrip("/")
        urls = {"overview": "/", "overview fragment": "/fragment/overview",
                "sessions": "/sessions", "search": "/sessions?q=zebra",
                "session": f"/sessions/{sid}",
                "session, long + lineage": f"/sessions/{long_sid}", "pairing": "/pairing"}
        ok = True
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            results = {name: await timed_get(http, base + path, reps)
                       for name, path in urls.items()}

            def cold() -> None:  # the overview re-reads the usage per day (its TTL passed)
                skew[0] += AGGREGATES_TTL_S + 1

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
    print(f"  {'baseline (static body)':28} median {b:6.2f}  p95 {p95(baseline):6.2f}")
    for name, (xs, nbytes) in results.items():
        m = med(xs)
        met = m < GOAL_PAGE_MS
        ok &= met
        print(f"  {name:28} median {m:6.2f}  p95 {p95(xs):6.2f}  ratio {m / b:5.1f}x  "
              f"{nbytes / 1024:5.1f} KiB  goal < {GOAL_PAGE_MS:.0f} ms: "
              f"{'met' if met else 'MISSED'}")
    return ok


async def poller(url: str, stop: asyncio.Event, hz: float) -> int:
    """Fetch `url` at a fixed rate until `stop`; returns the number of fetches."""
    fetches = 0
    period = 1.0 / hz
    async with aiohttp.ClientSession() as http:
        while not stop.is_set():
            t = time.perf_counter()
            async with http.get(url) as r:
                await r.read()
                assert r.status == 200, r.status
            fetches += 1
            wait = period - (time.perf_counter() - t)
            if wait > 0:
                try:
                    await asyncio.wait_for(stop.wait(), wait)
                except TimeoutError:
                    pass
    return fetches


async def turn_block(runner: GatewayRunner, fake: FakeAdapter, turns: int,
                     offset: int) -> list[float]:
    out: list[float] = []
    for i in range(offset, offset + turns):
        done = len(fake.turns_completed)
        t = time.perf_counter()
        await fake.inject(f"message {i}", chat_id=f"c{i % 20}", user_id="u1")
        await fake.wait_for(lambda d=done: len(fake.turns_completed) > d, 10)
        out.append((time.perf_counter() - t) * 1000)
    return out


CONDITIONS = ("off", "on, idle", "on + poller", "off, again")


async def turns(n: int, rounds: int, stored: int) -> bool:
    times: dict[str, list[float]] = {c: [] for c in CONDITIONS}
    pair_diffs: list[float] = []
    noise: list[float] = []  # A/A: the same gateway, two blocks of one round
    fetches = 0
    polled_s = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeOpenAIServer() as model, \
                runner_for(Path(tmp) / "off", model, dashboard__enabled=False) as (off, off_fake), \
                runner_for(Path(tmp) / "on", model, dashboard__enabled=True) as (on, on_fake):
            assert isinstance(off_fake, FakeAdapter) and isinstance(on_fake, FakeAdapter)
            assert on.dashboard is not None and off.dashboard is None
            t = time.perf_counter()
            await asyncio.gather(seed(off.store, stored), seed(on.store, stored))
            print(f"\nseeded {stored:,} sessions into each gateway's store in "
                  f"{time.perf_counter() - t:.1f} s")
            url = on.dashboard.url + "fragment/overview"
            for r in (off, on):  # warm-up: sessions, prompts, connections
                fake = off_fake if r is off else on_fake
                await turn_block(r, fake, 25, 0)
            for rnd in range(rounds):
                k = rnd % len(CONDITIONS)
                order = CONDITIONS[k:] + CONDITIONS[:k]  # rotate who goes first
                medians: dict[str, float] = {}
                for cond in order:
                    runner, fake = (off, off_fake) if cond.startswith("off") else (on, on_fake)
                    stop = asyncio.Event()
                    task = None
                    if cond == "on + poller":
                        task = asyncio.create_task(poller(url, stop, FETCH_HZ),
                                                   name="bench-dashboard-poller")
                        await asyncio.sleep(0.2)
                    t = time.perf_counter()
                    block = await turn_block(runner, fake, n, 25 + rnd * n)
                    if task is not None:
                        polled_s += time.perf_counter() - t
                        stop.set()
                        fetches += await task
                    times[cond] += block
                    medians[cond] = med(block)
                pair_diffs.append(medians["on + poller"] - medians["off"])
                noise.append(medians["off, again"] - medians["off"])
    m_off = med(times["off"])
    print(f"\nTurn (event → turn completed), {rounds} rounds of {n} turns per condition, "
          f"{stored:,} sessions stored, ms:")
    for cond in CONDITIONS:
        xs = times[cond]
        m = med(xs)
        tail = "" if cond == "off" else f"  ratio {m / m_off:4.2f}x  {m - m_off:+.2f} ms"
        label = cond + (" (baseline)" if cond == "off" else "")
        print(f"  {label:24} median {m:6.2f}  p95 {p95(xs):6.2f}{tail}")
    print(f"  poller: {fetches} fetches in {polled_s:.1f} s of polled blocks "
          f"({fetches / max(polled_s, 1e-9):.1f}/s; a browser tab fetches 0.5/s)")
    added = med(times["on + poller"]) - m_off
    spread = ", ".join(f"{d:+.2f}" for d in pair_diffs)
    print(f"  per-round median difference (on + poller − off): {spread}; median "
          f"{med(pair_diffs):+.2f} ms")
    floor = ", ".join(f"{d:+.2f}" for d in noise)
    print(f"  the same, off again − off (A/A, the noise of this machine): {floor}; median "
          f"{med(noise):+.2f} ms")
    rate = fetches / max(polled_s, 1e-9)
    print(f"  scaled to one browser tab (0.5 fetches/s, linear): {added * 0.5 / rate:+.2f} ms")
    met = added < GOAL_TURN_MS
    print(f"  added per turn (all turns, at {rate:.1f} fetches/s): {added:+.2f} ms  "
          f"goal < {GOAL_TURN_MS:.0f} ms: {'met' if met else 'MISSED'}")
    return met


async def main(quick: bool) -> int:
    configure_logging(level="INFO", fmt="json", log_dir=None,
                      stream=open(os.devnull, "w"))  # noqa: SIM115 - lives for the run
    ok = await pages(reps=10 if quick else 40, n=2_000 if quick else SESSIONS)
    ok &= await turns(n=40 if quick else 100, rounds=4 if quick else 8,
                      stored=2_000 if quick else SESSIONS)
    print(f"\ngoals: {'all met' if ok else 'some MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    raise SystemExit(run_loop(main(ap.parse_args().quick)))
