"""Separate OS processes against one state.db: a race defers the loser, and `kill -9` in the
middle of a compression leaves the old session intact for the next holder."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from gateway.compression import build_compression
from storage import StateStore
from tests.compression_pool.pool_support import (
    make_config,
    make_session,
    summary_responder,
    wait_for,
    write_profile,
)
from tests.fakes.openai_server import FakeOpenAIServer
from tests.pg_support import Target, open_store, storage_config

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("compress_cli_driver.py")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


async def _spawn(home: Path, *args: str) -> asyncio.subprocess.Process:
    env = {**os.environ, "HERMES_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return await asyncio.create_subprocess_exec(
        sys.executable, str(DRIVER), "compress", *args,
        cwd=str(ROOT), env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def _finish(proc: asyncio.subprocess.Process) -> tuple[int, dict[str, object], str]:
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    lines = out.decode().strip().splitlines()
    return proc.returncode, json.loads(lines[-1]) if lines else {}, err.decode()


def _in_home(home: Path, target: Target) -> Target:
    """SQLite: the profile's own state.db; PostgreSQL: the module's database."""
    return ("sqlite", str(home / "state.db")) if target[0] == "sqlite" else target


async def test_two_processes_racing_commit_exactly_once(
    tmp_path: Path, fake_openai: FakeOpenAIServer, store_target: Target
) -> None:
    home = tmp_path / "home"
    target = _in_home(home, store_target)
    write_profile(home, fake_openai, storage=storage_config(target))
    async with await open_store(target) as store:
        sid = await make_session(store, 60)
    gate = asyncio.Event()
    fake_openai.responder = summary_responder(gate=gate)

    procs = [await _spawn(home, sid, "--json") for _ in range(2)]
    waits = [asyncio.create_task(_finish(p)) for p in procs]
    done, pending = await asyncio.wait(waits, timeout=60, return_when=asyncio.FIRST_COMPLETED)
    assert done, "one process finishes while the other holds the lease"
    gate.set()  # now let the lease holder's summary through
    results = [w.result() for w in done] + [await w for w in pending]

    codes = sorted(code for code, _, _ in results)
    statuses = sorted(str(payload["status"]) for _, payload, _ in results)
    assert codes == [0, 3], [err for _, _, err in results]
    assert statuses == ["compressed", "deferred"]
    winner = next(p for _, p, _ in results if p["status"] == "compressed")
    assert set(winner) == {"status", "session_id", "child_session_id"}
    async with await open_store(target) as store:
        children = await store.children(sid)
        assert [c.id for c in children] == [winner["child_session_id"]]
        parent = await store.get_session(sid)
        assert parent is not None and parent.end_reason == "compression"


async def test_kill_9_mid_compression_leaves_the_session_intact_and_the_lease_is_taken_over(
    tmp_path: Path, fake_openai: FakeOpenAIServer, store_target: Target
) -> None:
    home = tmp_path / "home"
    target = _in_home(home, store_target)
    write_profile(home, fake_openai, lease_seconds=1.5, storage=storage_config(target))
    async with await open_store(target) as store:
        sid = await make_session(store, 60)
        fake_openai.responder = summary_responder(30)  # blocked in the summary until killed
        proc = await _spawn(home, sid, "--json")
        try:
            await wait_for(lambda: fake_openai.requests, within=60)
            dead = await store.current_lease(sid)
            assert dead is not None and f":{proc.pid}:" in dead.holder
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        assert proc.returncode == -signal.SIGKILL

        session = await store.get_session(sid)
        assert session is not None and session.is_live and session.end_reason is None
        assert await store.children(sid) == []
        rows = await store.load_all(sid)
        assert len(rows) == 60 and all(m.get("_active") for m in rows)

        await wait_for(lambda: _expired(store, sid), within=10)
        fake_openai.responder = summary_responder()
        hook = build_compression(make_config(fake_openai), store)
        try:
            out = await hook.compress_now(sid)
        finally:
            await hook.close()
        assert out.status == "compressed", out.detail
        assert out.lease_token is not None and out.lease_token > dead.token
        assert len(await store.children(sid)) == 1


async def _expired(store: StateStore, sid: str) -> bool:
    return await store.current_lease(sid) is None
