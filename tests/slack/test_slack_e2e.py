"""End to end: `hermes gateway run` (subprocess) ↔ fake Slack (Socket Mode) ↔ fake model.

A channel mention comes back as a streamed (posted, then edited) reply in the thread the
mention started. Then the gateway is killed with SIGKILL while the model hangs on a follow-up,
restarted, and the interrupted turn is answered exactly once; a Slack retry of the follow-up
after the restart makes no second turn; an unmentioned top-level message makes no turn while an
unmentioned reply in the bot's thread does (the thread is remembered across the restart).
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

from tests.fakes.gateway_process import gateway_process, until
from tests.fakes.openai_server import FakeOpenAIServer, hang, text
from tests.slack.fake_slack import FakeSlack

pytestmark = pytest.mark.timeout(60)

CHANNEL = "C0001"


def _write_config(home: Path, model: FakeOpenAIServer, fake: FakeSlack) -> None:
    config = {
        "providers": {"main": {"base_url": model.base_url, "api_keys": ["sk-test-key-1"],
                               "model": "fake-model", "context_length": 32000,
                               "timeout_s": 30, "max_retries": 0}},
        "gateway": {"drain_timeout_s": 1, "streaming": {"edit_interval_s": 0.05},
                    "health": {"port": 0}},
        "logging": {"file": {"enabled": False}},
        "platforms": {"slack": {"enabled": True, "bot_token": fake.bot_token,
                                "app_token": fake.app_token, "mode": "socket",
                                "api_base_url": fake.api_url, "allowed_users": ["U0001"]}},
    }
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(config))


def _gateway(home: Path) -> Any:
    return gateway_process(home, drop_env=("HERMES_", "SLACK_"))


async def _until(cond: Callable[[], bool], what: str, home: Path, timeout: float = 20.0) -> None:
    await until(cond, what, log=home / "stderr.log", timeout=timeout)


def _user_rows(db: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = conn.execute("SELECT content FROM messages WHERE role = 'user' ORDER BY id")
        return [r[0] or "" for r in rows]


def _texts(fake: FakeSlack) -> list[str]:
    return [m.text for m in fake.bot_messages(CHANNEL)]


async def test_streamed_reply_then_kill_mid_turn_and_recover(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with FakeOpenAIServer() as model, FakeSlack() as fake:
        _write_config(home, model, fake)
        first = "Paris is the capital of France, and it is lovely in spring."
        model.enqueue(text(first, chunk_chars=8, delay_s=0.05))

        async with _gateway(home) as proc:
            await _until(lambda: bool(fake.live_sockets()), "the socket connection", home)
            root = await fake.user_message("What is the capital of France?", channel=CHANNEL,
                                           mention=True)
            await _until(lambda: first in _texts(fake), "the first reply", home)
            [reply] = [m for m in fake.bot_messages(CHANNEL) if m.text == first]
            assert reply.thread_ts == root  # the top-level mention started a thread
            assert len(reply.history) >= 2 and fake.calls_to("chat.update")  # streamed

            model.enqueue(hang(120))
            hung_at = len(model.requests)
            await fake.user_message("And of Italy?", channel=CHANNEL, thread_ts=root,
                                    parent_user_id="U0001", mention=True)
            italy = fake.last_delivered
            assert italy is not None
            await _until(lambda: len(model.requests) > hung_at, "the model call to hang", home)
            proc.kill()  # SIGKILL mid-turn: no drain, no goodbye
            await proc.wait()

        recovered = "Rome is the capital of Italy."
        welcome = "You are welcome."
        model.enqueue(text(recovered), text(welcome))
        opened = fake.connections_opened
        async with _gateway(home):
            await _until(lambda: fake.connections_opened > opened and bool(fake.live_sockets()),
                         "the restarted gateway's socket", home)
            await fake.redeliver(italy)  # Slack retries the interrupted message
            await _until(lambda: recovered in _texts(fake), "the recovered reply", home)
            await fake.user_message("unrelated chatter", channel=CHANNEL)  # gated: no turn
            await fake.user_message("thanks!", channel=CHANNEL, thread_ts=root,
                                    parent_user_id="U0001")  # in the bot's thread: a turn
            await _until(lambda: welcome in _texts(fake), "the in-thread reply", home)
            await asyncio.sleep(0.3)

        msgs = fake.bot_messages(CHANNEL)
        texts = [m.text for m in msgs]
        assert texts.count(first) == 1 and texts.count(recovered) == 1
        assert all(m.thread_ts == root for m in msgs)
        assert not any(t.startswith("late reply") for t in texts)
        last_request = model.requests[-1].body["messages"]
        asked = [m for m in last_request if m["role"] == "user" and "Italy" in str(m["content"])]
        assert len(asked) == 1  # not lost, not doubled
        users = await asyncio.to_thread(_user_rows, home / "state.db")
        assert sum("Italy" in u for u in users) == 1
        assert sum("France" in u for u in users) == 1
        assert not any("chatter" in u for u in users)
        assert sum("thanks" in u for u in users) == 1
