"""The restart case of issue 15, end to end: `hermes gateway run` (a subprocess) with Telegram
long polling (the fake Bot API) and the fake model.

The gateway answers a message, gets SIGTERM and exits 0; while it is down the user sends one
more message; the gateway starts again. The user's chat is the oldest of a few dozen
sessions (start-up recovery walks it last) and the live answer takes a while, which is when
recovery used to take the live message for a turn the restart cut off and answer it twice.
`run_restart_case` returns what the user saw and what state.db holds; the test and
`benchmarks/restart_race.py` (N runs) judge it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from storage import StateStore
from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest, Reply
from tests.telegram.fake_bot_api import FakeBotApi
from tests.telegram.fake_updates import USER

__all__ = ["RestartOutcome", "run_restart_case"]

HERMES = str(Path(sys.executable).parent / "hermes")
WHILE_DOWN = "sent while the gateway was down"


@dataclass
class RestartOutcome:
    answers: int  # bot messages in the chat answering the message sent while down
    stored: int  # times state.db holds that user message
    asked: int  # model requests whose latest user message was it
    notices: list[str] = field(default_factory=list)  # recovery notices seen in that chat
    exit_codes: list[int] = field(default_factory=list)
    log_tail: str = ""

    @property
    def ok(self) -> bool:
        return (self.answers == 1 and self.stored == 1 and self.asked == 1
                and not self.notices and self.exit_codes[:1] == [0])

    def describe(self) -> str:
        return (f"answers={self.answers} stored={self.stored} asked={self.asked} "
                f"notices={self.notices} exit_codes={self.exit_codes}")


def _last_user_text(req: RecordedRequest) -> str:
    users = [m for m in req.messages if m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    return content if isinstance(content, str) else str(content)


def _responder(answer_delay_s: float) -> Any:
    async def respond(req: RecordedRequest) -> Reply:
        text = _last_user_text(req)
        if text == WHILE_DOWN:
            await asyncio.sleep(answer_delay_s)  # "the live answer takes a second or two"
        return Reply(text=f"echo: {text}")

    return respond


def _write_config(home: Path, api: FakeBotApi, model: FakeOpenAIServer,
                  users: list[int]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "providers": {"main": {"base_url": model.base_url, "api_keys": ["sk-test-restart"],
                               "model": "fake-model", "context_length": 32000,
                               "timeout_s": 30, "max_retries": 0}},
        "gateway": {"allowed_users": [str(u) for u in users], "drain_timeout_s": 2,
                    "streaming": {"edit_interval_s": 0.1}, "health": {"port": 0}},
        "compression": {"enabled": False},
        "platforms": {"telegram": {"enabled": True, "token": api.token,
                                   "base_url": api.base_url, "base_file_url": api.base_file_url,
                                   "poll_timeout_s": 1}},
        "logging": {"file": {"enabled": False}},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config))


class _Gateway:
    def __init__(self, root: Path) -> None:
        self.home = root / "hermes-home"
        self.env = {**os.environ, "HERMES_HOME": str(self.home), "HOME": str(root),
                    "HERMES_LOCK_DIR": str(root / "locks"), "NO_COLOR": "1"}
        self.env.pop("NOTIFY_SOCKET", None)
        self.log = root / "gateway.log"
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = await asyncio.create_subprocess_exec(
                HERMES, "gateway", "run", env=self.env, stdin=asyncio.subprocess.DEVNULL,
                stdout=out, stderr=out)

    async def stop(self, timeout_s: float = 20.0) -> int:
        """SIGTERM and wait; SIGKILL if it does not exit in time."""
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return proc.returncode if proc is not None and proc.returncode is not None else 0
        proc.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(proc.wait(), timeout_s)
        except TimeoutError:
            proc.kill()
            return await proc.wait()

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    async def until(self, pred: Any, what: str, timeout_s: float = 30.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not pred():
            if self.proc is not None and self.proc.returncode is not None:
                raise AssertionError(f"gateway exited ({self.proc.returncode}) waiting for "
                                     f"{what}:\n{self.tail()}")
            if loop.time() > deadline:
                raise AssertionError(f"timed out waiting for {what}:\n{self.tail()}")
            await asyncio.sleep(0.05)


async def run_restart_case(root: Path, *, sessions: int = 36,
                           answer_delay_s: float = 1.5, settle_s: float = 2.0) -> RestartOutcome:
    """One run in the fresh directory `root`: the user's chat, then `sessions` other users'
    chats (newer), SIGTERM, the message sent while down, restart, and the outcome."""
    others = [700_000 + i for i in range(sessions)]
    async with FakeOpenAIServer(responder=_responder(answer_delay_s)) as model, \
            FakeBotApi() as api:
        _write_config(root / "hermes-home", api, model, [USER["id"], *others])
        dm = api.private_chat()
        other_chats = [api.private_chat(uid) for uid in others]
        gw = _Gateway(root)
        exit_codes: list[int] = []
        try:
            await gw.start()
            await gw.until(lambda: bool(api.calls_of("getUpdates")), "the first poll")
            api.send_user(dm, "hello")  # the oldest session
            await gw.until(lambda: any(m.text == "echo: hello" for m in api.bot_messages(dm)),
                           "the first answer")
            for uid, chat in zip(others, other_chats, strict=True):
                api.send_user(chat, f"hi from {uid}",
                              user={**USER, "id": uid, "username": f"u{uid}"})
            await gw.until(lambda: all(api.bot_messages(c) for c in other_chats),
                           "every other chat answered", timeout_s=60)
            exit_codes.append(await gw.stop())

            api.send_user(dm, WHILE_DOWN)  # while the gateway is down
            await gw.start()
            await gw.until(lambda: any(m.text == f"echo: {WHILE_DOWN}"
                                       for m in api.bot_messages(dm)), "the answer")
            await asyncio.sleep(settle_s)  # room for a (wrong) second answer
        finally:
            exit_codes.append(await gw.stop())
        texts = [m.text for m in api.bot_messages(dm)]
        asked = sum(1 for r in model.requests if _last_user_text(r) == WHILE_DOWN)
    async with await StateStore.open(gw.home / "state.db") as store:
        stored = 0
        for s in await store.list_sessions(limit=1000):
            stored += sum(1 for m in await store.load_all(s.id)
                          if m.get("role") == "user" and m.get("content") == WHILE_DOWN)
    return RestartOutcome(
        answers=texts.count(f"echo: {WHILE_DOWN}"), stored=stored, asked=asked,
        notices=[t for t in texts if t.startswith(("🔄", "⚠️"))],
        exit_codes=exit_codes, log_tail=gw.tail())
