"""End to end: `hermes gateway run` (subprocess) ↔ fake Discord ↔ fake OpenAI model.

A thread message that mentions the bot comes back as a streamed, edited reply in the same
thread, referencing the user's message. Then the gateway is killed with SIGKILL while the model
hangs, restarted, and the interrupted turn is answered exactly once; a replay of the user's
message after the restart makes no second turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.discord.fake_discord import FakeDiscord
from tests.discord.fake_payloads import ALICE, THREAD
from tests.fakes.gateway_process import gateway_process, until
from tests.fakes.openai_server import FakeOpenAIServer, hang, text

pytestmark = pytest.mark.timeout(60)



def _write_config(home: Path, model: FakeOpenAIServer, fake: FakeDiscord) -> None:
    config = {
        "providers": {"main": {"base_url": model.base_url, "api_keys": ["sk-test-key-1"],
                               "model": "fake-model", "context_length": 32000,
                               "timeout_s": 30, "max_retries": 0}},
        "gateway": {"allowed_users": [str(ALICE)], "drain_timeout_s": 1,
                    "streaming": {"edit_interval_s": 0.05}, "health": {"port": 0}},
        "logging": {"file": {"enabled": False}},
        "platforms": {"discord": {"enabled": True, "token": fake.token,
                                  "api_base_url": fake.api_base_url,
                                  "gateway_url": fake.gateway_url}},
    }
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(config))


def _gateway(home: Path) -> Any:
    return gateway_process(home)


async def _until(cond: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    await until(cond, what, timeout=timeout)


def _read_db(db: Path) -> tuple[list[str], dict[str, str]]:
    """User message texts and cursors, read-only, after the gateway exited."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = conn.execute("SELECT content FROM messages WHERE role = 'user' ORDER BY id")
        users = [r[0] for r in rows]
        cursors = dict(conn.execute("SELECT name, value FROM cursors").fetchall())
    return users, cursors


async def test_streamed_reply_then_kill_mid_turn_and_recover(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with FakeOpenAIServer() as model, FakeDiscord() as fake:
        _write_config(home, model, fake)
        first_answer = "Paris is the capital of France, and it is lovely in spring."
        model.enqueue(text(first_answer, chunk_chars=8, delay_s=0.05))

        async with _gateway(home) as proc:
            await _until(lambda: fake.gateway.attached.is_set(), "the gateway to IDENTIFY")
            asked = await fake.user_says("What is the capital of France?", channel=THREAD,
                                         mention_bot=True)
            await _until(lambda: any(m.content == first_answer
                                     for m in fake.bot_messages(THREAD)), "the first reply")
            [reply] = fake.bot_messages(THREAD)
            assert reply.reference == asked.id  # a reply to the user's message
            assert reply.edits >= 1  # streamed: preview first, then edited in place
            assert any(method == "PATCH" for method, _, _ in fake.payloads)

            model.enqueue(hang(120))
            hung_at = len(model.requests)
            second = await fake.user_says("And of Italy?", channel=THREAD, mention_bot=True)
            await _until(lambda: len(model.requests) > hung_at, "the model call to hang")
            proc.kill()  # SIGKILL mid-turn: no drain, no goodbye
            await proc.wait()

        recovered = "Rome is the capital of Italy."
        model.enqueue(text(recovered))
        fake.gateway.attached.clear()
        async with _gateway(home):
            await _until(lambda: fake.gateway.attached.is_set(), "the restarted gateway")
            await fake.redeliver(second)  # a replay of the interrupted message
            await _until(lambda: any(m.content == recovered
                                     for m in fake.bot_messages(THREAD)), "the recovered reply")
            # the replay is dispatched before the recovered reply; give it a beat to be dropped
            await fake.user_says("thanks!", channel=THREAD)  # unmentioned: gated, no turn
            await asyncio.sleep(0.5)

        finals = [m.content for m in fake.bot_messages(THREAD)]
        [again] = [m for m in fake.bot_messages(THREAD) if m.content == recovered]
        assert again.reference == second.id
        assert finals.count(first_answer) == 1
        assert finals.count(recovered) == 1
        assert all(not m.content.startswith("late reply") for m in fake.bot_messages(THREAD))
        last_request = model.requests[-1].body["messages"]
        italy = [m for m in last_request if m["role"] == "user" and "Italy" in str(m["content"])]
        assert len(italy) == 1  # not lost, not doubled
        users, cursors = await asyncio.to_thread(_read_db, home / "state.db")
        assert sum("Italy" in (u or "") for u in users) == 1
        assert sum("France" in (u or "") for u in users) == 1
        assert not any("thanks" in (u or "") for u in users)
        assert str(THREAD) in cursors["discord:seen_channels"]  # catch-up position persisted
