"""End to end: `hermes gateway run` (a subprocess) ↔ fake Bot API ↔ fake OpenAI server.

A user message in a forum topic comes back as a streamed, edited, final reply in that topic;
then the gateway is killed (-9) while the model hangs, restarted, and the user's message is
neither lost nor duplicated and gets exactly one final reply.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from storage import StateStore
from tests.fakes.openai_server import FakeOpenAIServer, hang, text
from tests.telegram.fake_bot_api import USER, FakeBotApi

HERMES = str(Path(sys.executable).parent / "hermes")
pytestmark = pytest.mark.timeout(60)


@pytest_asyncio.fixture
async def model() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server


def write_config(home: Path, api: FakeBotApi, model: FakeOpenAIServer) -> None:
    home.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "providers": {"main": {"base_url": model.base_url, "api_keys": ["sk-test-e2e"],
                               "model": "fake-model", "context_length": 32000,
                               "timeout_s": 30, "max_retries": 0}},
        "gateway": {"allowed_users": [str(USER["id"])], "drain_timeout_s": 1,
                    "streaming": {"edit_interval_s": 0.1}, "health": {"port": 0}},
        "compression": {"enabled": False},
        "platforms": {"telegram": {"enabled": True, "token": api.token,
                                   "base_url": api.base_url, "base_file_url": api.base_file_url,
                                   "poll_timeout_s": 1}},
        "logging": {"file": {"enabled": False}},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config))


class Gateway:
    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "hermes-home"
        self.env = {**os.environ, "HERMES_HOME": str(self.home), "HOME": str(tmp_path),
                    "HERMES_LOCK_DIR": str(tmp_path / "locks")}
        self.log = tmp_path / "gateway.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen([HERMES, "gateway", "run"], env=self.env,
                                         stdout=out, stderr=subprocess.STDOUT)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


async def until(pred: Callable[[], bool], gw: Gateway, what: str, timeout_s: float = 20) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not pred():
        if gw.proc is not None and gw.proc.poll() is not None:
            raise AssertionError(f"gateway exited ({gw.proc.returncode}) waiting for {what}:\n"
                                 f"{gw.output()}")
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}:\n{gw.output()}")
        await asyncio.sleep(0.05)


def last_user_text(req: Any) -> str:
    users = [m for m in req.messages if m.get("role") == "user"]
    content = users[-1]["content"] if users else ""
    return content if isinstance(content, str) else str(content)


async def test_streamed_reply_in_topic_then_kill9_loses_and_duplicates_nothing(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    answer = "Hello from the model, streamed in several small pieces for you"
    async with FakeBotApi() as api:
        write_config(tmp_path / "hermes-home", api, model)
        forum, dm = api.forum_chat(), api.private_chat()
        gw = Gateway(tmp_path)
        try:
            # 11 chunks over ~2.2 s: the typing action takes the topic's 1-per-second slot, so
            # the first preview can only go out a second in; the stream must outlast that.
            model.enqueue(text(answer, chunk_chars=6, delay_s=0.2))
            gw.start()
            await until(lambda: bool(api.calls_of("getUpdates")), gw, "the first poll")
            api.send_user(forum, "@hermes_test_bot hello in the topic", thread_id=77)
            await until(lambda: any(m.text == answer for m in api.bot_messages(forum)), gw,
                        "the final reply in the topic")
            replies = api.bot_messages(forum)
            assert [(m.text, m.thread_id) for m in replies] == [(answer, 77)]
            assert replies[0].edits >= 1 and replies[0].versions[0] != answer  # streamed
            assert {c["command"] for c in api.commands} >= {"help", "new", "stop"}

            model.enqueue(hang(60))
            api.send_user(dm, "second question")
            await until(lambda: any(last_user_text(r) == "second question"
                                    for r in model.requests), gw, "the model call")
            gw.kill9()

            model.enqueue(text("recovered answer"))
            gw.start()
            await until(lambda: any(m.text == "recovered answer" for m in api.bot_messages(dm)),
                        gw, "the answer after the restart")
            await asyncio.sleep(1.0)  # room for a (wrong) duplicate turn to show up
        finally:
            gw.terminate()

        finals = [m for m in api.bot_messages(dm) if m.text == "recovered answer"]
        assert len(finals) == 1
        async with await StateStore.open(gw.home / "state.db") as store:
            user_rows = []
            for s in await store.list_sessions(limit=100):
                user_rows += [m for m in await store.load_all(s.id)
                              if m.get("role") == "user"]
        texts = [m.get("content") for m in user_rows]
        assert texts.count("second question") == 1
        assert texts.count("@hermes_test_bot hello in the topic") == 1
        assert api.token not in gw.log.read_text(errors="replace")  # the token never logged
