"""End-to-end cost of the gateway runtime (issue 5, deliverable 10).

Run: .venv/bin/python benchmarks/bench_gateway.py [--quick] [--profile] [--backend postgres]

`--backend postgres` prints the replicas figures instead (benchmarks/bench_replicas.py):
events/s with 1, 2 and 3 replicas on one PostgreSQL database and the handover path's
overhead, with one SQLite gateway in the same run.

The real `GatewayRunner` runs in this process with a lean in-memory adapter (it keeps only
timestamps, so the adapter's own bookkeeping is not measured), and the agent calls an instant
fake model through the real `openai` SDK over HTTP on 127.0.0.1. The fake model runs in a
separate process (so its HTTP handling does not share this event loop); it records when each
request arrived and when its last chunk was written (CLOCK_MONOTONIC is system-wide).

Figures:
- events/s end to end and p50/p99 *added* latency = (event emitted → model request received)
  + (model's last chunk written → adapter send/edit of the final text), for 1 session ×
  N sequential messages and for S concurrent sessions × 10 messages (each session sends its
  next message once the previous one is answered). Nothing lost and order kept per session
  are checked.
- RSS per idle session after I sessions had one turn each (workers still parked, and after the
  idle workers exited).
- time from process start (`hermes gateway run`, api adapter) to `/readyz` 200.
Baselines measured in the same run: the bare fake-model round trip through the openai SDK
(no gateway); the *ceiling*: the SDK alone sending the gateway's own request (captured from a
gateway run: system prompt, tool schemas, history) for as many chats at a time as the
concurrent run, no gateway code; the *floor*: the same plus the three durable writes every
event needs (dedup record, user message before the call, reply after it) through our storage
layer: what any one-process gateway on the SDK must at least spend; the fake model process's
own CPU per event (it shares the 2 cores); and the start of a bare Python interpreter.
The bench runs on the loop `hermes gateway run` uses (`gateway.eventloop`).
Goals: >= 1,000 events/s; p99 added latency < 20 ms at 1,000 sessions; < 50 KB per idle
session; ready in < 1.5 s; nothing lost; order kept per session.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import multiprocessing as mp
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.honest_floor import request_template, sdk_floor  # noqa: E402
from benchmarks.phases import GCTimer, ThreadCPU, profile_split, profiled  # noqa: E402
from gateway.events import ChatType, MessageEvent, OutboundMessage, SendResult, UserRef  # noqa: E402
from gateway.ports import (  # noqa: E402
    AdapterContext,
    BasePlatformAdapter,
    BudgetSpec,
    Capabilities,
    RateProfile,
)

# -- the fake model in its own process -------------------------------------------------------


def _model_process(conn: Any) -> None:
    from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest, Reply

    def token_of(req: RecordedRequest) -> str:
        for m in reversed(req.messages):
            if m.get("role") == "user":
                return str(m.get("content") or "").rsplit(" ", 1)[-1]
        return ""

    async def main() -> None:
        # The fake keeps every request it served: its own collector's pauses over that
        # growing heap would show up as "added" latency of the gateway. Not what we measure.
        gc.disable()
        server = FakeOpenAIServer(responder=lambda r: Reply(text=f"ok {token_of(r)}"))
        await server.start()
        conn.send(server.base_url)
        loop = asyncio.get_running_loop()
        last_body: Any = None
        while True:
            cmd = await loop.run_in_executor(None, conn.recv)
            if cmd == "times":
                conn.send([(token_of(r), r.received_at, r.finished_at) for r in server.requests])
                if server.requests:
                    last_body = server.requests[-1].body
                server.requests.clear()
                server.all_requests.clear()
            elif cmd == "last_body":
                conn.send(last_body)
            elif cmd == "stop":
                await server.stop()
                conn.send("bye")
                return

    from gateway.eventloop import run

    run(main())


class ModelProcess:
    def __init__(self) -> None:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_model_process, args=(child,), daemon=True)
        self._proc.start()
        self.base_url: str = self._conn.recv()
        self.pid = int(self._proc.pid or 0)

    async def times(self) -> dict[str, tuple[float, float]]:
        self._conn.send("times")
        rows = await asyncio.to_thread(self._conn.recv)
        return {tok: (rec, fin) for tok, rec, fin in rows}

    async def last_body(self) -> dict[str, Any]:
        """The JSON body of the last request served before the last `times()`."""
        self._conn.send("last_body")
        return await asyncio.to_thread(self._conn.recv)  # type: ignore[no-any-return]

    def stop(self) -> None:
        self._conn.send("stop")
        self._conn.recv()
        self._proc.join(5)


# -- a lean adapter ----------------------------------------------------------------------------


class BenchAdapter(BasePlatformAdapter):
    """Connects at once; `send`/`edit` record when a chat's expected final text appears."""

    capabilities = Capabilities(edit=True, typing=False, max_length=4096, trusted_auth=True,
                                rate_profile=RateProfile(per_chat=BudgetSpec(())))  # unlimited

    def __init__(self) -> None:
        self.name = "bench"
        self.ctx: AdapterContext | None = None
        self.expect: dict[str, tuple[str, asyncio.Future[float]]] = {}
        self._ids = 0
        self._run = uuid.uuid4().hex[:8]
        self._serial = itertools.count()
        self._connected = asyncio.Event()

    async def start(self, ctx: AdapterContext) -> None:
        self.ctx = ctx
        ctx.connected()
        self._connected.set()
        await ctx.stop_event.wait()

    async def stop(self) -> None:
        if self.ctx is not None:
            self.ctx.stop_event.set()

    def _seen(self, chat_id: str, text: str) -> None:
        want = self.expect.get(chat_id)
        if want is not None and text == want[0] and not want[1].done():
            want[1].set_result(time.monotonic())

    async def send(self, message: OutboundMessage) -> SendResult:
        self._ids += 1
        self._seen(message.chat_id, message.text)
        return SendResult.success(f"m{self._ids}")

    async def edit(self, chat_id: str, message_id: str, text: str, *,
                   formatted: bool = True) -> SendResult:
        self._seen(chat_id, text)
        return SendResult.success(message_id)

    async def ask(self, chat_id: str, token: str) -> tuple[float, float]:
        """Emit one user message; returns (emitted at, final delivered at)."""
        assert self.ctx is not None
        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.expect[chat_id] = (f"ok {token}", fut)
        event_id = f"{self._run}-{next(self._serial)}"  # unique, cheaper than uuid4 (load gen)
        event = MessageEvent(platform="bench", event_id=event_id, chat_id=chat_id,
                             chat_type=ChatType.DM, user=UserRef(id="u1"),
                             text=f"message {token}", message_id=event_id)
        t_in = time.monotonic()
        await self.ctx.emit(event)
        done = await asyncio.wait_for(fut, 60)
        del self.expect[chat_id]
        return t_in, done


# -- helpers ------------------------------------------------------------------------------------


class FullCollections:
    """Pauses of the cyclic collector's full (generation 2) collections, in seconds."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self._t0 = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.pauses.append(time.perf_counter() - self._t0)

    def take(self) -> list[float]:
        out, self.pauses = self.pauses, []
        return out


FULL_GC = FullCollections()


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def config(model_url: str, sections: dict[str, Any] | None = None, **gateway: Any) -> Any:
    from gateway.config.load import parse_config

    data = {**(sections or {}),
        "providers": {"main": {"base_url": model_url, "api_keys": ["sk-bench"],
                               "model": "fake-model", "context_length": 128000,
                               "timeout_s": 30, "max_retries": 0}},
        "gateway": {"allowed_users": ["u1"], "drain_timeout_s": 5, "burst_merge_s": 0,
                    "health": {"port": 0}, **gateway},
    }
    return parse_config(data, env={})[0]


class Gateway:
    def __init__(self, home: Path, model_url: str,
                 sections: dict[str, Any] | None = None) -> None:
        from gateway.paths import ProfilePaths, ensure_profile_dirs
        from gateway.runner import GatewayRunner

        self.adapter = BenchAdapter()
        self.runner = GatewayRunner(config(model_url, sections),
                                    ensure_profile_dirs(ProfilePaths(home)),
                                    adapters={"bench": self.adapter}, take_locks=False)

    async def __aenter__(self) -> Gateway:
        from gateway.process import settle_heap

        await self.runner.start()
        settle_heap()  # as `GatewayRunner.run` does once started
        return self

    async def __aexit__(self, *exc: object) -> None:
        from gateway.process import unsettle_heap

        await self.runner.shutdown()
        unsettle_heap()  # as `GatewayRunner.run` does on the way out


async def run_sessions(gw: Gateway, model: ModelProcess, sessions: int, per_session: int,
                       prefix: str, rate: float | None = None) -> dict[str, Any]:
    """`sessions` concurrent chats, each sending `per_session` messages one after another.

    Closed loop (`rate=None`): each chat sends its next message as soon as the previous one
    is answered. Open load (`rate` events/s in total): each chat sends every
    `sessions / rate` seconds, chats evenly staggered, and a chat whose previous message is
    still unanswered sends the next one when it is (order per chat is kept). Latency below
    capacity shows what the gateway adds; a closed loop of N chats only ever measures
    N / throughput."""
    marks: dict[str, tuple[float, float]] = {}
    period = sessions / rate if rate else 0.0
    start = time.monotonic() + 0.05

    async def chat(i: int) -> None:
        for j in range(per_session):
            if rate:
                delay = start + (i / sessions + j) * period - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            token = f"{prefix}{i}.{j}"
            marks[token] = await gw.adapter.ask(f"{prefix}{i}", token)

    reviews0 = await _reviews(gw)
    t0 = time.monotonic()
    cpu0 = time.process_time()
    FULL_GC.take()
    await asyncio.gather(*(chat(i) for i in range(sessions)))
    wall = time.monotonic() - t0
    cpu = time.process_time() - cpu0
    pauses = FULL_GC.take()
    reviews = await _reviews(gw)
    out = await _collect(gw, model, marks, sessions, per_session, prefix, wall, cpu)
    out["gc_pauses"] = pauses
    out["reviews"] = {k: v - reviews0.get(k, 0) for k, v in reviews.items()
                      if v - reviews0.get(k, 0)}
    return out


async def one_chat_at_a_time(gw: Gateway, model: ModelProcess, chats: int, per_chat: int,
                             prefix: str) -> dict[str, Any]:
    """`chats` chats one after another, each sending `per_chat` messages: one event in flight
    at a time, as in one long chat, but each request carries at most `per_chat` turns of
    history, as in the many-session run (one chat of 300 messages sends up to 600 history
    messages by its end, which the SDK encodes and the model receives every turn)."""
    runs = [await run_sessions(gw, model, 1, per_chat, f"{prefix}{k}.") for k in range(chats)]
    out: dict[str, Any] = {key: [v for r in runs for v in r[key]]
                           for key in ("added", "inbound", "outbound", "e2e", "later",
                                       "gc_pauses")}
    out.update(events=sum(r["events"] for r in runs), wall=sum(r["wall"] for r in runs),
               cpu=sum(r["cpu"] for r in runs), lost=sum(r["lost"] for r in runs),
               order_ok=all(r["order_ok"] for r in runs))
    out["eps"] = out["events"] / out["wall"]
    reviews: dict[str, int] = {}
    for r in runs:
        for k, v in r["reviews"].items():
            reviews[k] = reviews.get(k, 0) + v
    out["reviews"] = reviews
    return out


async def _reviews(gw: Gateway) -> dict[str, int]:
    """Background self-reviews recorded so far, by status (`skipped` split by reason)."""
    counts: dict[str, int] = {}
    for r in await gw.runner.store.list_reviews(limit=1_000_000):
        key = r.status if r.status != "skipped" else f"skipped ({r.reason})"
        counts[key] = counts.get(key, 0) + 1
    return counts


async def _collect(gw: Gateway, model: ModelProcess, marks: dict[str, tuple[float, float]],
                   sessions: int, per_session: int, prefix: str, wall: float,
                   cpu: float) -> dict[str, Any]:
    times = await model.times()
    added, inbound, outbound, e2e, later = [], [], [], [], []
    lost = [t for t in marks if t not in times]
    for token, (t_in, t_out) in marks.items():
        if token not in times:
            continue
        received, finished = times[token]
        inbound.append(received - t_in)
        outbound.append(t_out - finished)
        added.append(inbound[-1] + outbound[-1])
        e2e.append(t_out - t_in)
        if not token.endswith(".0"):
            later.append(added[-1])
    order_ok = await _order_kept(gw, prefix, sessions, per_session)
    n = sessions * per_session
    return {"events": n, "wall": wall, "eps": n / wall, "added": added, "inbound": inbound,
            "outbound": outbound, "e2e": e2e, "later": later,
            "lost": len(lost) + (n - len(marks)),
            "order_ok": order_ok, "cpu": cpu}


async def _order_kept(gw: Gateway, prefix: str, sessions: int, per_session: int) -> bool:
    store = gw.runner.store
    for i in range(0, sessions, max(1, sessions // 20)):  # a sample of sessions
        s = await store.find_by_session_key(f"bench:dm:{prefix}{i}")
        hist = await store.load_history(s.id)
        users = [m["content"] for m in hist if m["role"] == "user"]
        answers = [m["content"] for m in hist if m["role"] == "assistant"]
        want = [f"message {prefix}{i}.{j}" for j in range(per_session)]
        if users != want or answers != [f"ok {prefix}{i}.{j}" for j in range(per_session)]:
            return False
    return True


async def baseline_roundtrip(model_url: str, n: int) -> list[float]:
    """The bare model round trip through the openai SDK (streamed), no gateway."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=model_url, api_key="sk-bench", max_retries=0)
    out = []
    for i in range(n):
        t0 = time.monotonic()
        stream = await client.chat.completions.create(
            model="fake-model", stream=True,
            messages=[{"role": "user", "content": f"message base{i}"}])
        async for _ in stream:
            pass
        out.append(time.monotonic() - t0)
    await client.close()
    return out


async def idle_sessions(home: Path, model: ModelProcess, count: int) -> tuple[float, float]:
    """KB of RSS per idle session: (workers still parked, after the idle workers exited)."""
    async with Gateway(home, model.base_url) as gw:
        await run_sessions(gw, model, 50, 1, "warm")  # warm caches, pools, imports
        gc.collect()
        before = rss_kb()
        batch = 250
        for start in range(0, count, batch):
            await asyncio.gather(*(gw.adapter.ask(f"idle{i}", f"idle{i}.0")
                                   for i in range(start, min(count, start + batch))))
        await model.times()
        gc.collect()
        parked = rss_kb()
        manager = gw.runner.manager
        assert manager is not None
        for w in list(manager._workers.values()):  # what the idle timeout does, now
            w._idle = 0.0
            w._wake.set()
        for _ in range(200):
            if manager.active_count == 0:
                break
            await asyncio.sleep(0.01)
        gc.collect()
        freed = rss_kb()
    return (parked - before) / count, (freed - before) / count


def _cpu_ms(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def time_to_ready(model_url: str, runs: int, idle_s: float) -> tuple[list[float], float]:
    """Start → /readyz 200 per run, and the CPU the ready, idle gateway uses (ms per second,
    sampled over `idle_s` after the first timed run became ready). The runs are restarts of
    one profile, as a service manager makes them; its first start (which creates the
    database and the profile's caches) goes before them, untimed."""
    import urllib.request

    from benchmarks.bench_startup import env_for, home_with_api

    out: list[float] = []
    idle_cpu = float("nan")
    home, hp = home_with_api(model_url)
    env = env_for(home)
    for n in range(-1, runs):
        t0 = time.monotonic()
        proc = subprocess.Popen([str(Path(sys.executable).with_name("hermes")), "gateway", "run"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ready = None
        while time.monotonic() - t0 < 20 and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{hp}/readyz", timeout=1) as r:
                    if r.status == 200:
                        ready = time.monotonic() - t0
                        break
            except OSError:
                time.sleep(0.005)
        if ready is not None and n == 0:
            time.sleep(1.0)  # let start-up work (recovery, heap settling) finish
            before = _cpu_ms(proc.pid)
            time.sleep(idle_s)
            idle_cpu = (_cpu_ms(proc.pid) - before) / idle_s
        proc.terminate()
        proc.wait(30)
        if ready is not None and n >= 0:
            out.append(ready)
    return out, idle_cpu


def bare_python_start(runs: int) -> float:
    out = []
    for _ in range(runs):
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        out.append(time.monotonic() - t0)
    return statistics.median(out)


def print_phases(events: int, threads: ThreadCPU, gct: GCTimer, split: dict[str, float],
                 profiled_events: int) -> None:
    """CPU per event by phase: thread counters of the measured run, the loop thread's share
    split by the profiled pass (`benchmarks/phases.py`)."""
    per = 1000 / events
    loop_no_gc = max(0.0, threads.loop - gct.total)
    rows = [(name, loop_no_gc * frac * per) for name, frac in split.items()]
    rows += [("cyclic GC (counted)", gct.total * per),
             ("storage threads (SQLite, counted)", threads.storage * per),
             ("other threads (executor, DNS, counted)", threads.rest * per)]
    total = sum(v for _, v in rows) or 1.0
    print(f"  CPU per event by phase (counters of this run; the loop thread split by a profiled "
          f"pass of {profiled_events} events):")
    for name, v in sorted(rows, key=lambda r: -r[1]):
        print(f"    {name:<40} {v:6.3f} ms  {v / total:5.1%}")
    print(f"    {'total':<40} {total:6.3f} ms  ({gct.collections} collections)")


def ms(x: float) -> str:
    return f"{x * 1000:7.2f} ms"


def report(name: str, r: dict[str, Any], base_p50: float, ceiling: float = 0.0) -> None:
    vs = f" = {r['eps'] / ceiling:.2f}x the SDK-alone ceiling" if ceiling else ""
    print(f"\n{name}: {r['events']} events in {r['wall']:.2f} s = {r['eps']:,.0f} events/s{vs}; "
          f"lost {r['lost']}; order kept: {r['order_ok']}")
    print(f"  added latency  p50 {ms(pct(r['added'], 50))}  p99 {ms(pct(r['added'], 99))}"
          f"   (in→model p50 {ms(pct(r['inbound'], 50))}, model→final p50 "
          f"{ms(pct(r['outbound'], 50))})")
    if r["later"] and len(r["later"]) < len(r["added"]):
        print(f"  added, without each chat's first message (which creates its session): p50 "
              f"{ms(pct(r['later'], 50))}  p99 {ms(pct(r['later'], 99))}")
    print(f"  end to end     p50 {ms(pct(r['e2e'], 50))}  p99 {ms(pct(r['e2e'], 99))}"
          f"   = {pct(r['e2e'], 50) / base_p50:.1f}x the bare model round trip")
    print(f"  gateway process CPU {r['cpu']:.2f} s = {r['cpu'] / r['events'] * 1000:.2f} ms per "
          f"event (all threads: loop, SQLite, HTTP client); {r['cpu'] / r['wall']:.0%} of a core")
    if r.get("reviews") is not None:
        print("  background self-reviews ended during the run: "
              + (", ".join(f"{k} {v}" for k, v in sorted(r["reviews"].items())) or "none"))
    gcp = r.get("gc_pauses") or []
    print(f"  full GC collections during the run: {len(gcp)}"
          + (f", longest {max(gcp) * 1000:.1f} ms, {sum(gcp) * 1000:.0f} ms in all" if gcp else ""))


async def main_async(args: argparse.Namespace) -> None:
    from gateway.logging import configure_logging

    quick = args.quick
    tmp = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    configure_logging(level="INFO", fmt="json", log_dir=tmp / "logs",
                      stream=open(os.devnull, "w"))  # noqa: SIM115 - lives for the run
    model = ModelProcess()
    try:
        base = await baseline_roundtrip(model.base_url, 50 if quick else 300)
        base_p50 = statistics.median(base)
        print(f"baseline: bare model round trip via the openai SDK p50 {ms(base_p50)} "
              f"p99 {ms(pct(base, 99))} ({1 / base_p50:,.0f} sequential calls/s)")
        sessions = 100 if quick else 1000
        async with Gateway(tmp / "p0", model.base_url) as gw:  # one request as the gateway
            await run_sessions(gw, model, 1, 5, "t")           # sends it, history and all
        template = request_template(await model.last_body())
        floor_n = 1000 if quick else 5000
        ceil_rate, ceil_cpu = await sdk_floor(model.base_url, template, floor_n, sessions)
        await model.times()
        floor_rate, floor_cpu = await sdk_floor(model.base_url, template, floor_n, sessions,
                                                db_path=tmp / "floor.db")
        await model.times()
        honest_rate, honest_cpu = await sdk_floor(model.base_url, template, floor_n, sessions,
                                                  db_path=tmp / "honest.db", bare=True)
        await model.times()
        n1 = 100 if quick else 300  # one growing history: each turn resends all of it
        # The floor of one chat: nothing to batch (each write its own commit, each wake-up
        # for one event), the structural cost a single conversation pays at any gateway.
        one_sdk_rate, _ = await sdk_floor(model.base_url, template, n1, 1)
        await model.times()
        one_rate, one_cpu = await sdk_floor(model.base_url, template, n1, 1,
                                            db_path=tmp / "honest1.db", bare=True)
        await model.times()
        one_added = 1000 / one_rate - 1000 / one_sdk_rate  # mean ms the writes add per event
        print(f"ceiling: the openai SDK alone, {sessions} chats at a time, the gateway's own "
              f"request ({len(template):,} bytes): {ceil_rate:,.0f} calls/s, {ceil_cpu:.2f} ms "
              "CPU per call in this process (no gateway work)")
        print(f"honest floor: the same plus the three durable writes every event needs (dedup, "
              f"user message, reply) with bare sqlite3, no code of ours (same WAL/synchronous "
              f"settings and FTS5 indexes, one writer thread, group commit): {honest_rate:,.0f} "
              f"events/s, {honest_cpu:.2f} ms CPU per event")
        print(f"honest floor of one chat (the same, one event at a time): {one_rate:,.0f} "
              f"events/s, {one_cpu:.2f} ms CPU per event = {one_cpu / honest_cpu:.2f}x the CPU "
              f"per event at {sessions} chats; its writes add {one_added:.2f} ms per event "
              f"(mean) to the SDK's own call of that request = {one_added / (base_p50 * 1000):.2f}x "
              "the bare round trip")
        print(f"store floor (old, labelled): the same writes through our storage layer: "
              f"{floor_rate:,.0f} events/s, {floor_cpu:.2f} ms CPU per event = "
              f"{floor_rate / honest_rate:.2f}x the honest floor's rate")

        async with Gateway(tmp / "p1", model.base_url) as gw:
            await run_sessions(gw, model, 5, 2, "w")
            if args.profile:
                import cProfile
                import pstats

                prof = cProfile.Profile()
                prof.enable()
            one = await run_sessions(gw, model, 1, n1, "one")
            model_cpu0 = _cpu_ms(model.pid)
            threads, gct = ThreadCPU(), GCTimer()
            threads.start()
            with gct.counting():
                many = await run_sessions(gw, model, sessions, 10, "many")
            threads.stop()
            many["model_cpu_ms"] = (_cpu_ms(model.pid) - model_cpu0) / many["events"]
            with profiled() as phase_prof:  # a separate pass: its split, not its times
                prof_run = await run_sessions(gw, model, sessions, 3, "prof")
            split = profile_split(phase_prof)
            paced_rate = round(many["eps"] * 0.5)
            paced = await run_sessions(gw, model, sessions, 10 if not quick else 3, "paced",
                                       rate=paced_rate)
            if args.profile:
                prof.disable()
                pstats.Stats(prof).sort_stats("cumulative").print_stats("work/main|openai|httpx2|aiosqlite", 60)
        # Like for like: the closed-loop many-session run triggers its reviews at each chat's
        # tenth message, the end, where the bounded review queue skips nearly all of them;
        # one long chat runs one review per 10 model calls inside its window.
        async with Gateway(tmp / "p3", model.base_url,
                           {"skills": {"review": {"enabled": False}}}) as gw:
            await run_sessions(gw, model, 5, 2, "w")
            one_plain = await run_sessions(gw, model, 1, n1, "one")
            one_short = await one_chat_at_a_time(gw, model, n1 // 10, 10, "seq")
        report(f"1 session x {n1} messages", one, base_p50)
        report(f"1 session x {n1} messages, background self-review off (like for like: the "
               "many-session run below skips nearly all of its reviews)", one_plain, base_p50)
        report(f"one chat at a time, {n1 // 10} chats x 10 messages, self-review off (like for "
               "like with the many-session run: the same history depth, one event in flight)",
               one_short, base_p50)
        report(f"{sessions} concurrent sessions x 10 messages (closed loop: each chat sends its "
               "next message when answered)", many, base_p50, ceil_rate)
        print(f"  the fake model's own process: {many['model_cpu_ms']:.2f} ms CPU per event "
              f"(on the same 2 cores); honest floor = {honest_rate / ceil_rate:.2f}x the "
              f"ceiling; this run = {many['eps'] / honest_rate:.2f}x the honest floor "
              f"(goal >= 0.6x: {'met' if many['eps'] / honest_rate >= 0.6 else 'missed'}), "
              f"{many['eps'] / floor_rate:.2f}x the store floor")
        own = many["cpu"] / many["events"] * 1000 - honest_cpu
        print(f"  the gateway's own CPU per event above the honest floor: {own:.2f} ms")
        print_phases(many["events"], threads, gct, split, prof_run["events"])
        verdict = {True: "met", False: "missed"}
        for label, r in (("review on", one), ("review off", one_plain),
                         ("one chat at a time, 10 messages each, review off", one_short)):
            ratio = pct(r["added"], 50) / base_p50
            cpu_one, cpu_many = (r["cpu"] / r["events"] * 1000,
                                 many["cpu"] / many["events"] * 1000)
            print(f"  one session ({label}): added p50 = {ratio:.2f}x the bare round trip "
                  f"(goal <= 1.5x: {verdict[ratio <= 1.5]}); CPU per event {cpu_one:.2f} ms "
                  f"vs {cpu_many:.2f} ms at {sessions} sessions (goal: no higher: "
                  f"{verdict[cpu_one <= cpu_many]})")
            print(f"    against the floors of the same concurrency: added p50 "
                  f"{pct(r['added'], 50) * 1000:.2f} ms vs the {one_added:.2f} ms the one-chat "
                  f"floor's writes add; own CPU above the floor {cpu_one - one_cpu:.2f} ms per event vs "
                  f"{cpu_many - honest_cpu:.2f} ms at {sessions} sessions")
        report(f"{sessions} sessions x {10 if not quick else 3} messages, open load at "
               f"{paced_rate} events/s (half the closed-loop throughput)", paced, base_p50)
        print(f"  (closed loop: {sessions} chats always waiting means latency = {sessions} / "
              "throughput by Little's law; the open-load run shows the latency the gateway "
              "adds below saturation)")

        idle_n = 1000 if quick else 10_000
        parked, freed = await idle_sessions(tmp / "p2", model, idle_n)
        print(f"\nidle sessions ({idle_n:,}, one turn each): {parked:.1f} KB RSS each while "
              f"their workers are parked, {freed:.1f} KB after the idle workers exited")

        runs = 1 if quick else 3
        ready, idle_cpu = time_to_ready(model.base_url, runs, 3.0 if quick else 20.0)
        bare = bare_python_start(3)
        if ready:
            print(f"\nstart → /readyz 200 (hermes gateway run, api adapter, restarts of one "
                  f"profile; benchmarks/bench_startup.py has the details): median "
                  f"{statistics.median(ready):.3f} s over {len(ready)} run(s) = "
                  f"{statistics.median(ready) / bare:.1f}x a bare `python -c pass` ({bare:.3f} s)")
            print(f"idle, ready gateway (api adapter, no traffic): {idle_cpu:.1f} ms CPU per "
                  f"second = {idle_cpu / 10:.2f}% of a core")
        else:
            print("\nstart → /readyz: the gateway never became ready")
        print("\ngoals: >= 1,000 events/s; p99 added < 20 ms at 1,000 sessions; < 50 KB per "
              "idle session; ready < 1.5 s; nothing lost; order kept")
    finally:
        model.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (CI smoke run)")
    parser.add_argument("--profile", action="store_true", help="cProfile the message runs")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite",
                        help="postgres: the replicas figures (benchmarks/bench_replicas.py)")
    from gateway.eventloop import run

    args = parser.parse_args()
    if args.backend == "postgres":
        from benchmarks.bench_replicas import main_async as replicas_main

        run(replicas_main(args))
        return
    run(main_async(args))  # the loop `hermes gateway run` uses


if __name__ == "__main__":
    main()
