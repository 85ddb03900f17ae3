"""`sessions compress ID [--json] [--preview]` exit codes and output (DESIGN.md §7)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from storage import StateStore
from tests.compression_pool.pool_support import make_session, summary_responder, write_profile
from tests.compression_pool.test_compress_cli_processes import _finish, _spawn
from tests.fakes.openai_server import FakeOpenAIServer


async def test_exit_codes_for_noop_preview_unknown_and_compressed(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    home = tmp_path / "home"
    write_profile(home, fake_openai)
    async with await StateStore.open(home / "state.db") as store:
        short = await make_session(store, 4, title="Short")
        long = await make_session(store, 60, title="Long chat")
    fake_openai.responder = summary_responder()

    noop, preview, unknown = await asyncio.gather(
        _finish(await _spawn(home, short, "--json")),
        _finish(await _spawn(home, long, "--preview", "--json")),
        _finish(await _spawn(home, "no-such-session", "--json")),
    )
    assert noop[0] == 3 and noop[1] == {"status": "noop", "session_id": short,
                                        "child_session_id": None}
    assert preview[0] == 0 and preview[1]["status"] == "preview"
    assert unknown[0] == 1 and unknown[1]["status"] == "not_found"
    assert fake_openai.requests == [], "neither a no-op nor a preview calls the model"
    async with await StateStore.open(home / "state.db") as store:
        assert await store.children(long) == [], "a preview changes nothing"

    # by title, human output: the lineage tip is compressed
    proc = await _spawn(home, "Long chat", "--focus", "zebras")
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    text = out.decode()
    assert text.startswith(f"compressed {long} → ")
    assert "zebra report" in text
    assert "zebras" in fake_openai.requests[0].messages[-1]["content"], "the focus reaches the model"
    async with await StateStore.open(home / "state.db") as store:
        [child] = await store.children(long)
        assert child.title == "Long chat #2"
