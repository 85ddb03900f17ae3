"""Two OS processes appending to one state.db: nothing locked reaches callers, nothing lost."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

WRITER = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from storage import StateStore

    async def main(path, seconds, name):
        errors, acked = [], 0
        async with await StateStore.open(path) as store:
            sessions = [(await store.create_session(source=name)).id for _ in range(4)]

            async def pump(sid):
                nonlocal acked
                end = time.monotonic() + seconds
                i = 0
                while time.monotonic() < end:
                    try:
                        ids = await store.append_messages(sid, [
                            {"role": "user", "content": f"{name} question {i}"},
                            {"role": "assistant", "content": f"{name} answer {i} " + "x" * 500},
                        ])
                        acked += len(ids)
                        await store.record_if_new(name, f"{sid}:{i}")
                    except Exception as exc:
                        errors.append(repr(exc))
                    i += 1

            await asyncio.gather(*(pump(s) for s in sessions))
        print(json.dumps({"acked": acked, "errors": errors[:5], "n_errors": len(errors)}))

    asyncio.run(main(sys.argv[1], float(sys.argv[2]), sys.argv[3]))
    """
)


def test_two_processes_append_for_ten_seconds(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    root = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), "10", f"proc{i}"],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=90)
        assert p.returncode == 0, err
        assert "locked" not in err.lower()
        results.append(json.loads(out.strip().splitlines()[-1]))
    for r in results:
        assert r["n_errors"] == 0, r["errors"]
        assert r["acked"] > 0
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        per_source = dict(
            conn.execute(
                "SELECT s.source, COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id"
                " GROUP BY s.source"
            ).fetchall()
        )
        events = conn.execute("SELECT COUNT(*) FROM inbound_events").fetchone()[0]
        fts = conn.execute(
            "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'question'"
        ).fetchone()[0]
    assert rows == sum(r["acked"] for r in results)
    assert per_source == {"proc0": results[0]["acked"], "proc1": results[1]["acked"]}
    assert events == rows // 2
    assert fts == rows // 2
