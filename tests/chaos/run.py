"""One chaos run: the fakes of Telegram, Slack, Discord and the model on 127.0.0.1, the real
gateway as a subprocess, a seeded schedule of users and faults, then the invariants.

    result = await run_chaos(ChaosOptions(seed=7, duration_s=30, users=4), workdir)
    print(result.table()); assert result.verdict.ok, result.failure_text()
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.chaos.dbproxy import DbProxy
from tests.chaos.invariants import Verdict, check, expired_leases_free, is_answer
from tests.chaos.model import MARKER, ChaosModel, is_summary_request
from tests.chaos.platforms import Conv, Driver, Sent, make_drivers
from tests.chaos.process import DiskFiller, GatewayProcess, hold_read_transaction
from tests.chaos.replicas import (
    ReplicaGateways,
    pg_db_rows,
    pg_expired_leases_free,
    pg_replica_problems,
)
from tests.chaos.report import dump_run, table
from tests.chaos.schedule import Action, Plan, make_schedule
from tests.fakes.openai_server import FakeOpenAIServer
from tests.pg_support import create_database, drop_database

__all__ = ["ChaosOptions", "ChaosResult", "run_chaos"]

WORDS = ("please", "summarize", "the", "weather", "plan", "for", "today", "and", "list",
         "three", "ideas", "about", "lunch", "quickly", "again", "thanks")
LEASE_SECONDS = 8.0


@dataclass
class ChaosOptions:
    seed: int
    duration_s: float = 600.0
    users: int = 8
    messages: int = 2000
    kills: int = 24
    platform_faults: int = 120
    storage_faults: int = 12
    model_fault_rate: float = 0.1
    provider_timeout_s: float = 5.0
    quiesce_s: float = 120.0
    rss_limit_mb: float = 600.0
    disk_full: bool = True
    disk_mb: int = 48
    #: backend postgres: `replicas` gateways on one database (tests/chaos/replicas.py)
    replicas: int = 1
    backend: str = "sqlite"
    lease_s: float = 4.0

    @property
    def replicated(self) -> bool:
        return self.backend == "postgres"


@dataclass
class ChaosResult:
    options: ChaosOptions
    verdict: Verdict
    sent: int
    kills: Counter[str]
    kill_modes: Counter[str]
    faults: Counter[str]
    latencies: list[float]
    peak_rss_mb: float
    wall_s: float
    conversations: int = 0
    summaries: int = 0
    notes: list[str] = field(default_factory=list)

    def table(self) -> str:
        return table(self)

    def failure_text(self) -> str:
        lines = [f"chaos run FAILED (seed {self.options.seed}); replay with "
                 f"--seed {self.options.seed}"]
        lines += self.verdict.violations()[:40]
        return "\n".join(lines)


class ChaosRun:
    def __init__(self, opts: ChaosOptions, workdir: Path) -> None:
        self.opts = opts
        self.workdir = workdir
        rng = random.Random(opts.seed)
        self.rng = random.Random(rng.random())
        self.drivers: list[Driver] = make_drivers(random.Random(rng.random()), opts.users)
        self.model = ChaosModel(random.Random(rng.random()), fault_rate=opts.model_fault_rate,
                                client_timeout_s=opts.provider_timeout_s)
        self.sched_rng = random.Random(rng.random())
        self.home = workdir / "home"
        self.disk = DiskFiller(self.home, opts.disk_mb)
        self.gw: GatewayProcess | ReplicaGateways = GatewayProcess(self.home, workdir)
        self.proxy: DbProxy | None = None
        self.dsn = ""
        self.sent: list[Sent] = []
        self.kills: Counter[str] = Counter()
        self.kill_modes: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.notes: list[str] = []
        self.first_answer: dict[str, float] = {}
        self._seq = 0
        self._n = 0
        self._cycling = False
        self._cycle_lock = asyncio.Lock()
        self._kill_tasks: set[asyncio.Task[Any]] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.server: FakeOpenAIServer | None = None

    # -- setup -----------------------------------------------------------------------------
    def _config(self, server: FakeOpenAIServer) -> dict[str, Any]:
        cfg: dict[str, Any] = {
            "providers": {"main": {"base_url": server.base_url, "api_keys": ["sk-chaos-key"],
                                   "model": "fake-model", "context_length": 32000,
                                   "timeout_s": self.opts.provider_timeout_s,
                                   "max_retries": 2}},
            "agent": {"toolsets": []},
            "compression": {"enabled": True, "threshold_tokens": 3000,
                            "lease_seconds": LEASE_SECONDS, "timeout_seconds": 20},
            "gateway": {"busy_mode": "queue", "drain_timeout_s": 3,
                        "streaming": {"edit_interval_s": 0.2}, "health": {"port": 0},
                        "adapter_connect_timeout_s": 20},
            "logging": {"file": {"enabled": False},  # HERMES_CHAOS_DEBUG=1: read a run
                        "level": "DEBUG" if os.environ.get("HERMES_CHAOS_DEBUG") else "INFO"},
            "platforms": {d.name: d.config() for d in self.drivers},
            **({"storage": {"backend": "postgres", "dsn": self.proxy.dsn(self.dsn)}}
               if self.proxy is not None else {}),
        }
        if self.proxy is not None:
            lease = self.opts.lease_s
            cfg["gateway"]["replicas"] = {"lease_s": lease, "heartbeat_s": lease / 4,
                                          "sweep_s": 0.5, "stale_handover_s": 1.5}
        return cfg

    @property
    def convs(self) -> list[Conv]:
        return [c for d in self.drivers for c in d.convs]

    def driver(self, platform: str) -> Driver:
        return next(d for d in self.drivers if d.name == platform)

    def _spawn(self, coro: Any, name: str) -> None:
        task = asyncio.create_task(coro, name=f"chaos:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- users -----------------------------------------------------------------------------
    def _new(self, conv: Conv) -> Sent:
        self._n += 1
        marker = f"msg{self._n:06d}"
        words = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(2, 8)))
        return Sent(marker, conv, f"{marker} {words}", time.monotonic())

    async def _send(self, conv: Conv) -> None:
        s = self._new(conv)
        self._seq += 1
        s.seq = self._seq
        self.sent.append(s)
        await self.driver(conv.platform).send(s)

    async def _burst(self, conv: Conv, n: int) -> None:
        self.faults["user_burst"] += 1
        for i in range(n):
            if i:
                await asyncio.sleep(self.rng.uniform(0.05, 0.25))
            await self._send(conv)

    async def _reorder(self, conv: Conv) -> None:
        self.faults["user_out_of_order"] += 1
        first, second = self._new(conv), self._new(conv)
        second.seq, first.seq = self._seq + 1, self._seq + 2
        first.reversed_with, second.reversed_with = second.marker, first.marker
        self._seq += 2
        self.sent += [first, second]
        await self.driver(conv.platform).send_reversed(first, second)

    def _recent(self) -> Sent | None:
        pool = [s for s in self.sent[-30:] if s.handle is not None]
        return self.rng.choice(pool) if pool else None

    # -- faults ----------------------------------------------------------------------------
    def _turn_in_flight(self) -> bool:
        assert self.server is not None
        # replicas: a killed replica's request never finishes; past the client's timeouts
        stale = (time.monotonic() - 4 * self.opts.provider_timeout_s if self.opts.replicated
                 else float("-inf"))
        return any(r.finished_at is None and not is_summary_request(r)
                   and r.received_at > stale for r in self.server.requests[-20:])

    def _summary_in_flight(self) -> bool:
        assert self.server is not None
        return any(r.finished_at is None and is_summary_request(r)
                   for r in self.server.requests[-20:])

    async def _wait_for(self, cond: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cond():
                return True
            await asyncio.sleep(0.05)
        return False

    def _signal(self, sig: signal.Signals) -> None:
        self.gw.signal(sig)
        self.kills[sig.name] += 1

    async def _restart(self) -> None:
        await asyncio.sleep(self.rng.uniform(0.2, 1.5))  # downtime: users keep writing
        await self.gw.start()

    async def _kill(self, mode: str) -> None:
        """One kill point. Kill points take turns: one that comes while the previous restart
        is still going waits for it (under CPU contention a start-up takes seconds)."""
        try:
            await asyncio.wait_for(self._cycle_lock.acquire(), 90)
        except TimeoutError:
            self.kill_modes["skipped_busy"] += 1
            return
        self._cycling = True
        try:
            if not self.gw.running:
                await self.gw.start()
            await self._kill_cycle(mode)
        finally:
            self._cycling = False
            self._cycle_lock.release()

    async def _kill_cycle(self, mode: str) -> None:
        if isinstance(self.gw, ReplicaGateways):
            await self.gw.choose(mode)
        sig = signal.SIGKILL if mode.startswith("sigkill") else signal.SIGTERM
        if mode.endswith("_startup"):
            self._signal(signal.SIGTERM)
            await self.gw.wait(60)
            await self._restart()
            await asyncio.sleep(self.rng.uniform(0.05, 2.0))
        elif mode == "sigterm_compression":
            if not await self._wait_for(self._summary_in_flight, 15):
                mode = "sigterm_turn"
                await self._wait_for(self._turn_in_flight, 8)
        elif mode in ("sigterm_turn", "sigkill_turn", "sigterm_drain"):
            await self._wait_for(self._turn_in_flight, 8)
        else:
            await asyncio.sleep(self.rng.uniform(0.0, 2.0))
        self.kill_modes[mode] += 1
        self._signal(sig)
        if mode == "sigterm_drain":
            await asyncio.sleep(self.rng.uniform(0.05, 0.5))
            await self._send(self.rng.choice(self.convs))  # arrives while draining
            if self.rng.random() < 0.5:
                await asyncio.sleep(self.rng.uniform(0.1, 1.0))
                self.kill_modes["sigkill_in_drain"] += 1
                self._signal(signal.SIGKILL)
        await self.gw.wait(60)
        await self._restart()

    async def _slow(self, platform: str, seconds: float) -> None:
        d = self.driver(platform)
        self.faults[f"{platform}_slow"] += 1
        d.set_slow(self.rng.uniform(0.3, 1.2))
        await asyncio.sleep(seconds)
        d.set_slow(0.0)

    async def _disk_full(self, seconds: float) -> None:
        if self.proxy is not None:  # replicas: every storage fault cuts the database off
            await self._read_txn(seconds)
        if not self.disk.mounted:
            return
        self.faults["disk_full"] += 1
        await asyncio.to_thread(self.disk.fill)
        await asyncio.sleep(seconds)
        self.disk.free()

    async def _read_txn(self, seconds: float) -> None:
        if self.proxy is not None:  # replicas: the database is cut off instead
            self.faults["db_cut"] += 1
            await self.proxy.cut(seconds)
            return
        self.faults["sqlite_read_txn"] += 1
        await hold_read_transaction(self.home / "state.db", seconds)

    async def _do(self, a: Action) -> None:
        convs = self.convs
        match a.kind:
            case "send":
                await self._send(convs[a.conv % len(convs)])
            case "burst":
                self._spawn(self._burst(convs[a.conv % len(convs)], a.count), "burst")
            case "reorder":
                await self._reorder(convs[a.conv % len(convs)])
            case "edit":
                if (s := self._recent()) is not None:
                    self.faults["user_edit"] += 1
                    await self.driver(s.conv.platform).edit(s, f"{s.marker} (edited) again")
            case "redeliver":
                if (s := self._recent()) is not None:
                    self.faults["platform_redelivery"] += 1
                    await self.driver(s.conv.platform).redeliver(s)
            case "platform":
                platform, fault = a.name.split(":")
                self.faults[fault] += 1
                await self.driver(platform).inject(fault)
            case "slow":
                self._spawn(self._slow(a.name, a.seconds), "slow")
            case "kill":
                task = asyncio.create_task(self._kill(a.name), name="chaos:kill")
                self._kill_tasks.add(task)
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            case "read_txn":
                self._spawn(self._read_txn(a.seconds), "read-txn")
            case "disk_full":
                self._spawn(self._disk_full(a.seconds), "disk-full")

    # -- watching --------------------------------------------------------------------------
    async def _watch_answers(self) -> None:
        while True:
            now = time.monotonic()
            for d in self.drivers:
                for f in d.finals():
                    if is_answer(f.text) and f.text.endswith("END"):
                        for m in MARKER.findall(f.text):
                            self.first_answer.setdefault(m, now)
            await asyncio.sleep(0.5)

    def _settled(self) -> bool:
        if self._turn_in_flight() or self._summary_in_flight():
            return False
        notices = {(f.platform, f.chat) for d in self.drivers for f in d.finals()
                   if f.text.startswith("⚠️")}
        for s in self.sent:
            d = self.driver(s.conv.platform)
            if not d.accepted(s):
                if s.conv.platform != "discord":
                    return False
                continue
            if (s.marker not in self.first_answer
                    and (s.conv.platform, s.conv.chat) not in notices):
                return False
        return True

    async def _quiesce(self) -> None:
        self.model.fault_rate = 0.0
        for d in self.drivers:
            d.set_slow(0.0)
            d.clear_faults()
        if self._kill_tasks:  # every kill point happens, also one late in the schedule
            await asyncio.wait(self._kill_tasks, timeout=180)
        if not self.gw.running:
            await self.gw.start()
        await self._wait_for(lambda: all(d.connected() for d in self.drivers), 60)
        deadline = time.monotonic() + self.opts.quiesce_s
        stable = 0
        while time.monotonic() < deadline and stable < 4:
            stable = stable + 1 if self._settled() else 0
            await asyncio.sleep(0.5)
        if stable < 4:
            self.notes.append(f"did not settle within {self.opts.quiesce_s:.0f} s")
        await asyncio.sleep(1.5)  # room for a wrong duplicate to show up

    def _dump(self) -> None:
        """What the chats show and what users sent, for reading a failed run."""
        dump_run(self.workdir, self.drivers, self.sent, self.first_answer)

    def _keep_db(self) -> None:
        """A copy of state.db beside the log (the tmpfs goes away with the run)."""
        if self.proxy is not None:
            return
        for suffix in ("", "-wal", "-shm"):
            src = self.home / f"state.db{suffix}"
            if src.exists():
                shutil.copyfile(src, self.workdir / f"state.db{suffix}")

    # -- the run ---------------------------------------------------------------------------
    async def run(self) -> ChaosResult:
        started = time.monotonic()
        if self.opts.replicated:
            return await self._run_replicated(started)
        return await self._run_here(started)

    async def _run_replicated(self, started: float) -> ChaosResult:
        self.opts.disk_full = False  # the state is in PostgreSQL
        self.dsn = await asyncio.to_thread(create_database)
        self.proxy = await DbProxy().start()
        homes = [self.home / f"r{i}" for i in range(max(1, self.opts.replicas))]
        self.gw = ReplicaGateways(homes, self.workdir, self.proxy.dsn(self.dsn),
                                  random.Random(self.rng.random()))
        try:
            return await self._run_here(started)
        finally:
            await self.proxy.stop()
            if os.environ.get("HERMES_CHAOS_KEEP_DB"):  # for reading a failed run
                (self.workdir / "database.txt").write_text(self.dsn + "\n")
            else:
                await asyncio.to_thread(drop_database, self.dsn)

    async def _run_here(self, started: float) -> ChaosResult:
        if self.opts.disk_full:
            if not self.disk.mount():
                self.notes.append(self.disk.reason)
        else:
            self.notes.append("disk-full faults skipped: disabled by option")
        self.home.mkdir(parents=True, exist_ok=True)
        for member in getattr(self.gw, "members", ()):
            member.home.mkdir(parents=True, exist_ok=True)
        try:
            async with FakeOpenAIServer(responder=self.model) as server:
                self.server = server
                for d in self.drivers:
                    await d.start()
                try:
                    return await self._run(server, started)
                finally:
                    for t in list(self._tasks):
                        t.cancel()
                    await asyncio.gather(*self._tasks, return_exceptions=True)
                    if self.gw.running:
                        self.gw.signal(signal.SIGKILL)
                        await self.gw.wait(10)
                    for d in self.drivers:
                        await d.stop()
        finally:
            self.disk.unmount()

    async def _run(self, server: FakeOpenAIServer, started: float) -> ChaosResult:
        opts = self.opts
        for home in [m.home for m in getattr(self.gw, "members", ())] or [self.home]:
            (home / "config.yaml").write_text(yaml.safe_dump(self._config(server)))
        plan = Plan(opts.seed, opts.duration_s, opts.messages, opts.kills,
                    opts.platform_faults, opts.storage_faults)
        pairs = [(d.name, f) for d in self.drivers for f in d.faults]
        # DMs carry most of the traffic, as they do for a personal assistant
        weights = [3.0 if c.kind == "dm" else 1.0 for c in self.convs]
        schedule = make_schedule(plan, self.sched_rng, weights, pairs)
        if not self.disk.mounted and self.proxy is None:
            schedule = [a for a in schedule if a.kind != "disk_full"]
        await self.gw.start()
        if not await self._wait_for(lambda: all(d.connected() for d in self.drivers), 60):
            raise RuntimeError("the gateway did not connect to every platform at start:\n"
                               + self.gw.log.read_text(errors="replace")[-3000:])
        watcher = asyncio.create_task(self._watch_answers(), name="chaos:answers")
        t0 = time.monotonic()
        try:
            for action in schedule:
                delay = t0 + action.at - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await self._do(action)
            await asyncio.sleep(max(0.0, t0 + opts.duration_s - time.monotonic()))
            await self._quiesce()
            last_pid = self.gw.pid
            self.kill_modes["final_stop"] += 1
            if isinstance(self.gw, ReplicaGateways):
                last_pid = None
                await self.gw.stop_all()
            else:
                self._signal(signal.SIGTERM)
                await self.gw.wait(60)
        finally:
            watcher.cancel()
        self._keep_db()
        self._dump()
        for k, v in self.model.faults.items():
            self.faults[k] += v
        replicated = isinstance(self.gw, ReplicaGateways)
        verdict = check(self.sent, self.drivers, self.home / "state.db", last_pid=last_pid,
                        peak_rss_mb=self.gw.peak_rss_mb(), rss_limit_mb=opts.rss_limit_mb,
                        rss_growth=self.gw.rss_growth_problems(),
                        db_rows=await pg_db_rows(self.dsn) if replicated else None)
        if isinstance(self.gw, ReplicaGateways):
            verdict.storage += await pg_replica_problems(self.dsn)
            verdict.storage += await pg_expired_leases_free(self.dsn, LEASE_SECONDS + 2)
            self.notes.append("kill targets: " + ", ".join(
                f"{k} {v}" for k, v in sorted(self.gw.targets.items())))
            assert self.proxy is not None
            self.notes.append(f"database cut off {self.proxy.cuts} times through the proxy")
        else:
            verdict.storage += await expired_leases_free(self.home / "state.db",
                                                         LEASE_SECONDS + 2)
        latencies = sorted(self.first_answer[s.marker] - s.sent_at for s in self.sent
                           if s.marker in self.first_answer)
        return ChaosResult(opts, verdict, len(self.sent), self.kills, self.kill_modes,
                           self.faults, latencies, self.gw.peak_rss_mb(),
                           time.monotonic() - started, len(self.convs), self.model.summaries,
                           self.notes)


async def run_chaos(opts: ChaosOptions, workdir: Path) -> ChaosResult:
    workdir.mkdir(parents=True, exist_ok=True)
    return await ChaosRun(opts, workdir).run()
