"""`hermes chat` as a person uses it, in a pseudo-terminal: type, see the streamed answer,
complete and run `/status`, interrupt a hanging turn with Ctrl-C, leave with `/exit`. The
gateway is the one `hermes chat` starts itself (no gateway runs on the profile)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pexpect
import pytest

from tests.chat.conftest import HERMES, chat_env, hermes, stored_texts, write_profile
from tests.fakes.openai_server import FakeOpenAIServer, Reply, call, hang, tool_calls

pytestmark = pytest.mark.timeout(120)


async def _expect(child: pexpect.spawn, pattern: str, timeout: float = 30) -> str:
    await asyncio.to_thread(child.expect, pattern, timeout=timeout)
    return str(child.before) + str(child.after)


async def test_type_stream_status_interrupt_and_exit(tmp_path: Path,
                                                     model: FakeOpenAIServer) -> None:
    prof = write_profile(tmp_path, model.base_url)
    child = pexpect.spawn(str(HERMES), ["chat"], env=chat_env(tmp_path), encoding="utf-8",
                          dimensions=(40, 100), timeout=30)
    try:
        await _expect(child, "you ›")
        model.enqueue(Reply(text="The **tide** comes in twice a day.", delay_s=0.05))
        child.sendline("when does the tide come?")
        shown = await _expect(child, "twice a day")
        assert "tide" in shown and "**" not in shown      # Markdown rendered, not raw
        assert model.requests[-1].stream                  # the model was asked to stream
        await _expect(child, "you ›")

        child.send("/sta")
        child.send("\t")                                    # completes to /status
        await _expect(child, "/status")
        child.sendline("")
        status = await _expect(child, r"Compressions: 0")
        assert "Model: fake-model" in status
        await _expect(child, "you ›")

        model.enqueue(tool_calls(call("read_file", {"path": "nothing-here.txt"})),
                      Reply(text="No such file, sorry.", delay_s=0.6))
        child.sendline("read nothing-here.txt")
        progress = await _expect(child, "No such file, sorry.")
        assert "🔧 read_file" in progress                  # the tool call as a progress line
        await _expect(child, "you ›")

        model.enqueue(hang())
        child.sendline("think forever")
        await _expect(child, "…")
        for _ in range(100):  # until the model holds the request
            if any("think forever" in json.dumps(r.body) for r in model.requests):
                break
            await asyncio.sleep(0.05)
        child.sendintr()                                    # Ctrl-C: stop this turn
        await _expect(child, "interrupted")
        await _expect(child, "you ›")
        child.sendline("/exit")
        await _expect(child, pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    stored = stored_texts(prof)
    assert ("cli", "user", "when does the tide come?") in stored   # the cli platform's session
    assert ("cli", "assistant", "The **tide** comes in twice a day.") in stored


async def test_q_json_answers_once_and_resume_continues(tmp_path: Path,
                                                        model: FakeOpenAIServer) -> None:
    """Each `hermes chat -q` is its own process (its own chat-only gateway): the session
    lives in the store between them. `/title NAME` as the very first message names it."""
    write_profile(tmp_path, model.base_url)
    named = await asyncio.to_thread(hermes, tmp_path, "chat", "-q", "/title Colours")
    assert named.returncode == 0 and "Title set: Colours" in named.stdout, named.stderr
    model.enqueue(Reply(text="Noted: blue.", usage={"prompt_tokens": 11,
                                                     "completion_tokens": 3,
                                                     "total_tokens": 14}))
    first = await asyncio.to_thread(hermes, tmp_path, "chat", "-q", "my colour is blue",
                                    "--json")
    assert first.returncode == 0, first.stderr
    out = json.loads(first.stdout)
    assert out["reply"] == "Noted: blue." and out["ok"] is True
    assert out["usage"] == {"input_tokens": 11, "output_tokens": 3}
    sid = out["session"]
    assert re.fullmatch(r"[\w-]+", sid)

    model.enqueue(Reply(text="Still blue."))
    again = await asyncio.to_thread(hermes, tmp_path, "chat", "--resume", "Colours", "-q",
                                    "/new", timeout=60)
    assert "New session" in again.stdout, again.stderr  # /new ended the titled session
    back = await asyncio.to_thread(hermes, tmp_path, "chat", "--resume", "Colours", "-q",
                                   "and my colour?", "--json")
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["session"] == sid
    seen = [m.get("content") for m in model.requests[-1].body["messages"]]
    assert "my colour is blue" in seen                  # the resumed history reached the model


async def test_resume_by_session_id_continues_that_session(tmp_path: Path,
                                                           model: FakeOpenAIServer) -> None:
    """`hermes chat --resume <id>` (the id `--json` printed) goes back to an untitled session
    after /new left it."""
    write_profile(tmp_path, model.base_url)
    model.enqueue(Reply(text="Noted: the key is under the mat."))
    first = await asyncio.to_thread(hermes, tmp_path, "chat", "-q", "the key is under the mat",
                                    "--json")
    assert first.returncode == 0, first.stderr
    sid = json.loads(first.stdout)["session"]
    left = await asyncio.to_thread(hermes, tmp_path, "chat", "-q", "/new")
    assert "New session" in left.stdout, left.stderr
    model.enqueue(Reply(text="Under the mat."))
    back = await asyncio.to_thread(hermes, tmp_path, "chat", "--resume", sid, "-q",
                                   "where is the key?", "--json")
    assert back.returncode == 0, back.stderr
    out = json.loads(back.stdout)
    assert out["session"] == sid and out["reply"] == "Under the mat."
    seen = [m.get("content") for m in model.requests[-1].body["messages"]]
    assert seen[-3:] == ["the key is under the mat", "Noted: the key is under the mat.",
                         "where is the key?"]
    missing = await asyncio.to_thread(hermes, tmp_path, "chat", "--resume", "no-such-session",
                                      "-q", "hello")
    assert missing.returncode == 1 and "hermes: error:" in missing.stderr
