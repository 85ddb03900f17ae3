"""Storage benchmark: append throughput vs a bare floor, DB size, search latency.

    .venv/bin/python benchmarks/bench_storage.py [--quick] [--messages N] [--keep DIR]
        [--backend sqlite|postgres] [--dsn ADMIN_URI]

`--backend postgres` runs the SQLite figures AND the PostgreSQL figures in the same run and
prints them side by side. PostgreSQL gets two throw-away databases on the server of `--dsn`
(default: the local server, trust authentication): one for the store, one for its floor
(the same rows into the same schema with one bare asyncpg `executemany` in one transaction).

Workload: realistic turns over 1,000 sessions (user ~200 chars, assistant with tool calls
~800, 1-2 tool results of 2-20 KB, final assistant ~800; about 4 KB per message), appended
through `StateStore.append_messages` one await per step of a turn (the user message first,
then the rest), many sessions concurrently. Floor: the same rows into the same schema
(tables, FTS tables, triggers) with one bare `sqlite3.executemany` in one transaction.
Then 200 searches (1-3 words; common, rare, substrings, Chinese): median and p95.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage import StateStore  # noqa: E402
from storage.codec import MESSAGE_COLUMNS, message_to_row  # noqa: E402
from storage.db import prepare_database  # noqa: E402
from storage.opening import AnyStore  # noqa: E402

SESSIONS = 1_000
CONCURRENCY = 100
COMMON = ["the", "error", "file", "test", "run", "value", "data", "result", "line", "config"]
ZH = ["数据库", "连接", "失败", "服务器", "配置", "文件", "错误", "用户", "部署", "测试", "日志",
      "超时", "重试", "权限", "缓存", "网络", "请求", "响应", "内存", "进程"]


def build_vocab(rng: random.Random) -> list[str]:
    syll = ["ka", "lo", "mi", "ne", "ru", "ta", "zo", "pe", "qui", "ser", "vin", "dal", "mor",
            "ex", "on", "tri", "ul", "gra", "fen", "hos"]
    english = COMMON + (
        "and to of in is for with on that this it as be at by from or not are was have an "
        "function module import return class install build deploy server client request "
        "response timeout retry connection database query index table column user session "
        "message token model prompt cache memory process thread async await socket port host "
        "path directory output input status warning info debug trace stack exception failed "
        "success started stopped update delete create insert select commit branch merge push "
        "pull version package dependency python node docker kubernetes linux shell command"
    ).split()
    words = list(dict.fromkeys(english))
    while len(words) < 6_000:
        w = "".join(rng.choice(syll) for _ in range(rng.randint(2, 4)))
        if w not in words:
            words.append(w)
    return words


class Corpus:
    """A long word stream drawn with Zipf-like weights; messages are slices of it."""

    def __init__(self, rng: random.Random, size: int = 3_000_000) -> None:
        vocab = build_vocab(rng)
        weights = [1.0 / (i + 1) ** 1.05 for i in range(len(vocab))]
        words = rng.choices(vocab, weights=weights, k=size // 6)
        self.vocab = vocab
        lines, line = [], []
        for i, w in enumerate(words):
            line.append(w)
            if len(line) >= rng.randint(8, 16):
                if i % 5 == 0:
                    line.append(f"src/{w}/{words[i - 1]}.py:{i % 997}")
                lines.append(" ".join(line))
                line = []
        self.text = "\n".join(lines)
        self.rng = rng

    def take(self, n: int) -> str:
        start = self.rng.randrange(0, len(self.text) - n - 1)
        start = self.text.find(" ", start) + 1
        return self.text[start : start + n]

    def zh(self, n: int) -> str:
        return "".join(self.rng.choice(ZH) for _ in range(max(1, n // 3))) + "，"


def make_turn(c: Corpus, rng: random.Random, turn: int) -> list[dict[str, Any]]:
    user = c.zh(60) + c.take(120) if rng.random() < 0.1 else c.take(rng.randint(150, 250))
    n_tools = rng.choice((1, 2))
    calls = [
        {
            "id": f"call_{turn}_{k}",
            "type": "function",
            "function": {
                "name": rng.choice(("terminal", "read_file", "web_search", "patch")),
                "arguments": json.dumps({"command": c.take(rng.randint(30, 120))}),
            },
        }
        for k in range(n_tools)
    ]
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": user},
        {"role": "assistant", "content": c.take(rng.randint(500, 900)), "tool_calls": calls},
    ]
    for call in calls:
        msgs.append(
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "name": call["function"]["name"],
                "content": c.take(rng.randint(2_000, 20_000)),
            }
        )
    msgs.append({"role": "assistant", "content": c.take(rng.randint(600, 1_000)),
                 "finish_reason": "stop"})
    return msgs


def make_workload(total: int, seed: int = 7) -> tuple[Corpus, list[list[list[dict[str, Any]]]]]:
    """Per session, a list of turns; about `total` messages overall."""
    rng = random.Random(seed)
    corpus = Corpus(rng)
    sessions: list[list[list[dict[str, Any]]]] = [[] for _ in range(SESSIONS)]
    count, turn = 0, 0
    while count < total:
        for s in sessions:
            t = make_turn(corpus, rng, turn)
            s.append(t)
            count += len(t)
            turn += 1
            if count >= total:
                break
    return corpus, sessions


def text_bytes(sessions: list[list[list[dict[str, Any]]]]) -> int:
    n = 0
    for s in sessions:
        for t in s:
            for m in t:
                n += len((m.get("content") or "").encode())
                if m.get("tool_calls"):
                    n += len(json.dumps(m["tool_calls"]).encode())
    return n


def db_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


Opener = Any  # () -> Awaitable[store]: StateStore.open(path) or PostgresStore.open(dsn)


async def run_store(opener: Opener, sessions: list[list[list[dict[str, Any]]]],
                    total: int) -> dict:
    store = await opener()
    ids = [(await store.create_session(source="bench", session_key=f"k{i}")).id
           for i in range(len(sessions))]
    done = 0
    marks: list[float] = []
    next_mark = 10_000
    t0 = time.perf_counter()

    async def worker(w: int) -> None:
        nonlocal done, next_mark
        mine = list(range(w, len(sessions), CONCURRENCY))
        depth = max(len(sessions[i]) for i in mine)
        for t in range(depth):
            for i in mine:
                if t >= len(sessions[i]):
                    continue
                turn = sessions[i][t]
                await store.append_messages(ids[i], turn[:1])
                await store.append_messages(ids[i], turn[1:])
                done += len(turn)
                while done >= next_mark:
                    marks.append(time.perf_counter())
                    next_mark += 10_000

    await asyncio.gather(*(worker(w) for w in range(CONCURRENCY)))
    elapsed = time.perf_counter() - t0
    batches, ops = store.write_stats
    await store.close()
    slices = []
    prev = t0
    for m in marks:
        slices.append(10_000 / (m - prev))
        prev = m
    return {"elapsed": elapsed, "rate": done / elapsed, "slices": slices, "messages": done,
            "batches": batches, "ops": ops}


def run_floor(path: Path, sessions: list[list[list[dict[str, Any]]]]) -> dict:
    prepare_database(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=NORMAL")
    now = time.time()
    conn.executemany(
        "INSERT INTO sessions(id, source, started_at) VALUES (?, 'bench', ?)",
        [(f"s{i}", now) for i in range(len(sessions))],
    )
    rows = []
    depth = max(len(s) for s in sessions)
    for t in range(depth):
        for i, s in enumerate(sessions):
            if t < len(s):
                rows.extend(message_to_row(f"s{i}", m, now) for m in s[t])
    t0 = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(
        f"INSERT INTO messages ({MESSAGE_COLUMNS}) VALUES ({', '.join('?' * 16)})", rows
    )
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - t0
    conn.close()
    return {"elapsed": elapsed, "rate": len(rows) / elapsed, "messages": len(rows)}


def make_queries(corpus: Corpus, rng: random.Random, n: int = 200) -> list[tuple[str, str]]:
    vocab = corpus.vocab
    out: list[tuple[str, str]] = []
    for i in range(n):
        kind = i % 8
        if kind in (0, 1):
            q, label = rng.choice(COMMON), "common"
        elif kind == 2:
            q, label = " ".join(rng.sample(COMMON, 2)), "common"
        elif kind == 3:
            q, label = rng.choice(vocab[3_000:]), "rare"
        elif kind == 4:
            q, label = " ".join(rng.sample(vocab[50:2_000], rng.randint(2, 3))), "mixed"
        elif kind == 5:
            q, label = rng.choice(ZH) + rng.choice(ZH), "chinese"
        elif kind == 6:
            q, label = rng.choice(ZH), "chinese"
        else:
            w = rng.choice([v for v in vocab[100:1_000] if len(v) >= 6])
            q, label = w[1:5], "substring"
        out.append((q, label))
    return out


async def run_search(opener: Opener, queries: list[tuple[str, str]]) -> dict[str, list[float]]:
    store: AnyStore = await opener()
    times: dict[str, list[float]] = {}
    hits = 0
    for q, _ in queries[:10]:
        await store.search(q)
    for q, label in queries:
        t0 = time.perf_counter()
        res = await store.search(q)
        dt = (time.perf_counter() - t0) * 1000
        hits += bool(res)
        times.setdefault(label, []).append(dt)
        times.setdefault("all", []).append(dt)
    await store.close()
    times["_hits"] = [float(hits)]
    return times


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]


def _floor_rows(sessions: list[list[list[dict[str, Any]]]], now: float) -> list[tuple[Any, ...]]:
    rows = []
    depth = max(len(s) for s in sessions)
    for t in range(depth):
        for i, s in enumerate(sessions):
            if t < len(s):
                rows.extend(message_to_row(f"s{i}", m, now) for m in s[t])
    return rows


async def run_pg_floor(dsn: str, sessions: list[list[list[dict[str, Any]]]]) -> dict:
    import asyncpg

    from storage.postgres import prepare_postgres

    await prepare_postgres(dsn)
    conn = await asyncpg.connect(dsn)
    try:
        now = time.time()
        await conn.executemany("INSERT INTO sessions(id, source, started_at) VALUES"
                               " ($1, 'bench', $2)", [(f"s{i}", now) for i in range(len(sessions))])
        rows = _floor_rows(sessions, now)
        marks = ", ".join(f"${i}" for i in range(1, 17))
        t0 = time.perf_counter()
        async with conn.transaction():
            await conn.executemany(f"INSERT INTO messages ({MESSAGE_COLUMNS}) VALUES ({marks})",
                                   rows)
        elapsed = time.perf_counter() - t0
        size = int(await conn.fetchval("SELECT pg_database_size(current_database())"))
    finally:
        await conn.close()
    return {"elapsed": elapsed, "rate": len(rows) / elapsed, "messages": len(rows), "size": size}


async def _pg_admin(admin: str, sql: str) -> Any:
    import asyncpg

    conn = await asyncpg.connect(admin)
    try:
        return await conn.fetchval(sql)
    finally:
        await conn.close()


def _pg_dsn(admin: str, name: str) -> str:
    return f"{admin.rpartition('/')[0]}/{name}"


def measure(label: str, opener: Opener, floor: dict, sessions: list[list[list[dict[str, Any]]]],
            total: int, raw: int, queries: list[tuple[str, str]], size_of: Any) -> dict:
    print(f"[{label}] floor (bare executemany, one txn): {floor['rate']:,.0f} msg/s "
          f"({floor['elapsed']:.1f}s)")
    ours = asyncio.run(run_store(opener, sessions, total))
    print(f"[{label}] store.append_messages:            {ours['rate']:,.0f} msg/s "
          f"({ours['elapsed']:.1f}s, {ours['batches']:,} transactions for "
          f"{ours['ops']:,} write ops)")
    ratio = ours["rate"] / floor["rate"]
    print(f"[{label}] ratio to floor: {ratio:.2f}  (goal >= 0.50: {'met' if ratio >= 0.5 else 'missed'})")
    if ours["slices"]:
        sl = ", ".join(f"{r:,.0f}" for r in ours["slices"])
        print(f"[{label}] rate per 10k slice (msg/s): {sl}")
    size = size_of()
    print(f"[{label}] DB size: {size / 1e6:.1f} MB = {size / raw:.2f}x text (goal <= 2.5x)")
    times = asyncio.run(run_search(opener, queries))
    hit_count = int(times.pop("_hits")[0])
    for name in ("all", "common", "rare", "mixed", "substring", "chinese"):
        v = times.get(name, [])
        if v:
            print(f"[{label}] search {name:<9} n={len(v):>3}  median "
                  f"{statistics.median(v):6.2f} ms  p95 {pct(v, 0.95):6.2f} ms")
    print(f"[{label}] queries with hits: {hit_count}/{len(queries)}  (goal p95 <= 20 ms)")
    return {"floor": floor["rate"], "rate": ours["rate"], "ratio": ratio, "size": size / raw,
            "hits": hit_count, "search": {k: (statistics.median(v), pct(v, 0.95))
                                          for k, v in times.items() if v}}


def side_by_side(results: dict[str, dict]) -> None:
    names = list(results)
    print("\nside by side (same run, same workload):")
    print(f"  {'figure':<28}" + "".join(f"{n:>16}" for n in names))

    def row(label: str, fmt: Any) -> None:
        print(f"  {label:<28}" + "".join(f"{fmt(results[n]):>16}" for n in names))

    row("floor msg/s", lambda r: f"{r['floor']:,.0f}")
    row("store append msg/s", lambda r: f"{r['rate']:,.0f}")
    row("ratio to own floor", lambda r: f"{r['ratio']:.2f}")
    row("DB size / text", lambda r: f"{r['size']:.2f}x")
    for k in ("all", "common", "rare", "mixed", "substring", "chinese"):
        row(f"search {k} median/p95 ms",
            lambda r, k=k: "{:.1f}/{:.1f}".format(*r["search"].get(k, (0.0, 0.0))))
    row("queries with hits", lambda r: str(r["hits"]))
    if len(names) == 2:
        a, b = (results[n] for n in names)
        print(f"  {names[1]} / {names[0]} append rate: {b['rate'] / a['rate']:.2f}; "
              f"search p95 (all): {b['search']['all'][1] / a['search']['all'][1]:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="5,000 messages")
    ap.add_argument("--messages", type=int, default=None)
    ap.add_argument("--keep", type=Path, default=None, help="keep the SQLite files in this dir")
    ap.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite",
                    help="postgres: SQLite and PostgreSQL side by side in one run")
    ap.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/postgres",
                    help="PostgreSQL server (admin URI) for --backend postgres")
    args = ap.parse_args()
    total = args.messages or (5_000 if args.quick else 100_000)

    tmp = Path(tempfile.mkdtemp(prefix="bench_storage_"))
    work = args.keep or tmp
    work.mkdir(parents=True, exist_ok=True)
    made: list[str] = []
    try:
        t = time.perf_counter()
        corpus, sessions = make_workload(total)
        raw = text_bytes(sessions)
        n_msgs = sum(len(turn) for s in sessions for turn in s)
        print(f"workload: {n_msgs:,} messages in {SESSIONS:,} sessions, "
              f"{raw / 1e6:.1f} MB text ({raw / n_msgs / 1000:.1f} KB/msg), "
              f"generated in {time.perf_counter() - t:.1f}s")
        queries = make_queries(corpus, random.Random(11))
        results: dict[str, dict] = {}

        floor = run_floor(work / "floor.db", sessions)
        state = work / "state.db"

        async def open_sqlite() -> Any:
            return await StateStore.open(state)

        results["sqlite"] = measure("sqlite", open_sqlite, floor, sessions, total, raw,
                                    queries, lambda: db_size(state))
        if args.backend == "postgres":
            import uuid

            from storage.postgres import PostgresStore

            tag = uuid.uuid4().hex[:8]
            store_db, floor_db = f"hermes_bench_{tag}", f"hermes_bench_floor_{tag}"
            for name in (store_db, floor_db):
                asyncio.run(_pg_admin(args.dsn, f'CREATE DATABASE "{name}"'))
                made.append(name)
            pg_floor = asyncio.run(run_pg_floor(_pg_dsn(args.dsn, floor_db), sessions))
            dsn = _pg_dsn(args.dsn, store_db)

            async def open_pg() -> Any:
                return await PostgresStore.open(dsn)

            def pg_size() -> int:
                return int(asyncio.run(_pg_admin(
                    dsn, "SELECT pg_database_size(current_database())")))

            results["postgres"] = measure("postgres", open_pg, pg_floor, sessions, total, raw,
                                          queries, pg_size)
        side_by_side(results)
    finally:
        for name in made:
            asyncio.run(_pg_admin(args.dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
