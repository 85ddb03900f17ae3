"""Replicas figures for `bench_gateway.py --backend postgres` (issue 20): events/s with 1, 2
and 3 gateway replicas on one PostgreSQL database, and what the handover path costs.

Run: .venv/bin/python benchmarks/bench_gateway.py --backend postgres [--quick]
     (or this file directly; `HERMES_TEST_PG` names the server, default the local one)

The real `GatewayRunner`s run in this process, each a replica with its own store
connections and a lean adapter; the fake model runs in its own process (bench_gateway's).
S chats each send M messages one after another (closed loop). Events are spread over the
replicas round-robin per message, as a load balancer in front of webhooks would: with 2 or
3 replicas most events land on a replica that does not own their session and are handed
over (held in the session's line, the owner woken by NOTIFY, claimed under its lease).

Same-run figures: one gateway on SQLite and one on PostgreSQL (a set of one: every event
goes through the lease and the line, never handed over), then 2 and 3 replicas; and the
handover path alone: 2 replicas, every event emitted on the replica that does NOT own its
session, against every event emitted on the owner. All replicas share this process's two
cores, so no scaling is expected on this machine; the figures to read are the overheads.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_gateway import BenchAdapter, ModelProcess, config, ms, pct  # noqa: E402

__all__ = ["replica_figures"]


class SharedAdapter(BenchAdapter):
    """A bench adapter whose expected finals are shared by every replica's adapter (the
    reply comes from the session's owner, whichever replica the event landed on)."""

    def __init__(self, expect: dict[str, tuple[str, asyncio.Future[float]]]) -> None:
        super().__init__()
        self.expect = expect


def _config(model_url: str, storage: dict[str, Any], lease_s: float) -> Any:
    """bench_gateway's config with a storage block and the replicas' lease."""
    from gateway.config.load import parse_config

    data = config(model_url, replicas={"lease_s": lease_s}).model_dump(mode="json")
    data["storage"] = storage
    data["providers"]["main"]["api_keys"] = ["sk-bench"]
    return parse_config(data, env={})[0]


class Replicas:
    def __init__(self, root: Path, model_url: str, n: int, *, backend: str, dsn: str | None,
                 lease_s: float = 10.0) -> None:
        from gateway.paths import ProfilePaths, ensure_profile_dirs
        from gateway.runner import GatewayRunner

        self.expect: dict[str, tuple[str, asyncio.Future[float]]] = {}
        self.adapters = [SharedAdapter(self.expect) for _ in range(n)]
        storage = ({"backend": "postgres", "dsn": dsn} if backend == "postgres"
                   else {"backend": "sqlite"})
        self.runners = []
        for i, adapter in enumerate(self.adapters):
            cfg = _config(model_url, storage, lease_s)
            self.runners.append(GatewayRunner(
                cfg, ensure_profile_dirs(ProfilePaths(root / f"r{i}")),
                adapters={"bench": adapter}, take_locks=False))
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> Replicas:
        for r in self.runners:
            await r.start()
            self._stack.push_async_callback(r.shutdown)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    def owner_index(self, chat: str) -> int | None:
        for i, r in enumerate(self.runners):
            if r.replica is not None and r.replica.sessions.owns(f"bench:dm:{chat}"):
                return i
        return None


_RUNS = itertools.count(1)


async def _drive(rs: Replicas, sessions: int, per: int, prefix: str,
                 pick: Any) -> dict[str, Any]:
    """`sessions` chats send `per` messages each, one after another; `pick(i, j, chat)` is
    the replica message j of chat i lands on. Order is checked on these messages."""
    marks: dict[str, tuple[float, float]] = {}
    tag = f"c{next(_RUNS)}."

    async def chat(i: int) -> None:
        for j in range(per):
            token = f"{prefix}{i}.{tag}{j}"
            adapter = rs.adapters[pick(i, j, f"{prefix}{i}")]
            marks[token] = await adapter.ask(f"{prefix}{i}", token)

    t0 = time.monotonic()
    await asyncio.gather(*(chat(i) for i in range(sessions)))
    wall = time.monotonic() - t0
    e2e = [done - t_in for t_in, done in marks.values()]
    store = rs.runners[0].store
    ok = True
    for i in range(0, sessions, max(1, sessions // 10)):
        s = await store.find_by_session_key(f"bench:dm:{prefix}{i}")
        users = [m["content"] for m in await store.load_history(s.id)
                 if m["role"] == "user"] if s is not None else []
        ok = ok and users[-per:] == [f"message {prefix}{i}.{tag}{j}" for j in range(per)]
    return {"events": len(marks), "wall": wall, "eps": len(marks) / wall, "e2e": e2e,
            "order_ok": ok}


def _line(name: str, r: dict[str, Any], base: float | None = None) -> str:
    rel = f", {r['eps'] / base:.2f}x of one PostgreSQL gateway" if base else ""
    return (f"{name:<44} {r['eps']:8.1f} events/s{rel}; end to end p50 "
            f"{ms(statistics.median(r['e2e']))} p99 {ms(pct(r['e2e'], 99))}; "
            f"order {'kept' if r['order_ok'] else 'BROKEN'}")


async def replica_figures(model: ModelProcess, *, quick: bool, dsn_factory: Any) -> None:
    """Print the figures (see the module docstring). `dsn_factory()` gives a fresh database
    (and its cleanup)."""
    sessions, per = (10, 5) if quick else (40, 10)
    tmp = Path(tempfile.mkdtemp(prefix="bench-replicas-"))
    print(f"replicas: {sessions} chats x {per} messages each (closed loop), events spread "
          "round-robin over the replicas")
    async with Replicas(tmp / "sqlite", model.base_url, 1, backend="sqlite", dsn=None) as rs:
        await _drive(rs, 2, 2, "w", lambda i, j, c: 0)
        sqlite = await _drive(rs, sessions, per, "s", lambda i, j, c: 0)
    print(_line("1 gateway on SQLite (same run)", sqlite))
    results: dict[int, dict[str, Any]] = {}
    for n in (1, 2, 3):
        dsn, drop = await asyncio.to_thread(dsn_factory)
        try:
            async with Replicas(tmp / f"pg{n}", model.base_url, n, backend="postgres",
                                dsn=dsn) as rs:
                await _drive(rs, 2, 2, "w", lambda i, j, c: 0)
                results[n] = await _drive(rs, sessions, per, f"p{n}x",
                                          lambda i, j, c, n=n: (i + j) % n)
        finally:
            await asyncio.to_thread(drop)
        print(_line(f"{n} replica(s) on PostgreSQL", results[n],
                    None if n == 1 else results[1]["eps"]))
    dsn, drop = await asyncio.to_thread(dsn_factory)
    try:
        async with Replicas(tmp / "handover", model.base_url, 2, backend="postgres",
                            dsn=dsn) as rs:
            # first message of each chat on replica 0: it owns every session from then on
            await _drive(rs, sessions, 1, "h", lambda i, j, c: 0)

            def other(i: int, j: int, chat: str) -> int:
                owner = rs.owner_index(chat)
                return 1 - owner if owner is not None else 0

            def same(i: int, j: int, chat: str) -> int:
                owner = rs.owner_index(chat)
                return owner if owner is not None else 0

            local = await _drive(rs, sessions, per, "h", same)
            handed = await _drive(rs, sessions, per, "h", other)
    finally:
        await asyncio.to_thread(drop)
    print(_line("2 replicas, every event on its session's owner", local))
    print(_line("2 replicas, every event handed over", handed))
    added = statistics.median(handed["e2e"]) - statistics.median(local["e2e"])
    print(f"handover path: +{ms(added)} per event at the median "
          f"({handed['eps'] / local['eps']:.2f}x the events/s of the owner's own path)")


def fresh_database() -> tuple[str, Any]:
    from tests import pg_support

    reason = pg_support.unreachable_reason()
    if reason is not None:
        raise SystemExit(f"bench_replicas: {reason}")
    dsn = pg_support.create_database()
    return dsn, lambda: pg_support.drop_database(dsn)


async def main_async(args: argparse.Namespace) -> None:
    import os

    from gateway.logging import configure_logging

    tmp = Path(tempfile.mkdtemp(prefix="bench-replicas-"))
    configure_logging(level="WARNING", fmt="json", log_dir=tmp / "logs",
                      stream=open(os.devnull, "w"))  # noqa: SIM115 - lives for the run
    model = ModelProcess()
    try:
        await replica_figures(model, quick=args.quick, dsn_factory=fresh_database)
    finally:
        model.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    from gateway.eventloop import run

    run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
