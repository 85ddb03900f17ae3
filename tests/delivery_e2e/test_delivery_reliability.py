"""Per-chat rate limits, kill -9 recovery through the outbox, unreachable chats."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path

from gateway.delivery.service import RECOVERED_MARKER, ReplyTarget
from tests.delivery_e2e.support import TimedFakeAdapter
from tests.fakes.openai_server import text
from tests.integration.harness import gateway

REPO = Path(__file__).resolve().parents[2]


async def test_delivery_429_on_one_chat_slows_that_chat_only(tmp_path, model):
    retry_after = 1.5
    reply = "A short answer that streams in a few pieces for both chats."
    model.enqueue(text(reply, chunk_chars=8, delay_s=0.03), text(reply, chunk_chars=8,
                                                                 delay_s=0.03))
    fake = TimedFakeAdapter()
    rule = fake.fail_when("rate_limited", chat_id="c1", op="send", retry_after=retry_after)
    async with gateway(tmp_path, model, adapter=fake,
                       gateway__streaming__edit_interval_s=0.1) as (_runner, fake):
        await fake.inject("question one", chat_id="c1", user_id="u1")
        await fake.inject("question two", chat_id="c2", user_id="u2")
        await fake.wait_turns(2, timeout_s=20)
        await fake.wait_for(lambda: fake.messages("c1") == [reply], timeout_s=10)
        assert fake.messages("c2") == [reply]
        assert len(rule.hits) == 1
        throttled_at = rule.hits[0]
        later_c1 = [s for s in fake.stamps if s.chat_id == "c1" and s.at > throttled_at
                    and s.op != "typing" and s.ok]
        assert later_c1, "chat c1 got its reply later"
        assert min(s.at for s in later_c1) >= throttled_at + retry_after * 0.95
        # Chat c2 went on meanwhile: its whole reply landed inside c1's throttle window.
        c2_calls = [s for s in fake.stamps if s.chat_id == "c2" and s.op in ("send", "edit")]
        assert c2_calls and all(s.ok for s in c2_calls)
        c2_final = max(s.at for s in c2_calls)
        assert c2_final < throttled_at + retry_after


async def _run_child(mode: str, home: Path, url: str, out: Path) -> int:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.delivery_e2e.support", mode, str(home), url, str(out),
        cwd=REPO, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    except TimeoutError:
        proc.kill()
        _, err = await proc.communicate()
        raise AssertionError(f"{mode} child hung: " + err.decode(errors="replace")[-2000:]) from None
    assert proc.returncode is not None
    if proc.returncode not in (0, -9):
        raise AssertionError(err.decode(errors="replace")[-2000:])
    return proc.returncode


def _outbox(home: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT state, text FROM outbox ORDER BY id").fetchall()


async def test_delivery_kill_9_before_final_send_recovers_exactly_once(tmp_path, model):
    reply = "The answer is 42, computed carefully."
    model.enqueue(text(reply, chunk_chars=6, delay_s=0.02))
    out = tmp_path / "out.json"
    assert await _run_child("crash", tmp_path, model.base_url, out) == -9
    # The final reply was recorded before the send that never happened.
    assert _outbox(tmp_path) == [("pending", reply)]
    assert await _run_child("recover", tmp_path, model.base_url, out) == 0
    seen = json.loads(out.read_text())
    assert seen["messages"] == [f"{RECOVERED_MARKER}\n\n{reply}"]
    assert _outbox(tmp_path) == [("delivered", reply)]
    assert len(model.requests) == 1  # the answer was re-sent, not re-generated


async def test_delivery_forbidden_chat_is_unreachable_until_it_writes_again(tmp_path, model):
    model.enqueue(text("First reply."), text("Welcome back."))
    fake = TimedFakeAdapter()
    rule = fake.fail_when("forbidden", chat_id="c9", count=1_000)
    async with gateway(tmp_path, model, adapter=fake) as (runner, fake):
        await fake.inject("hello", chat_id="c9", user_id="u1")
        await fake.wait_turns(1, timeout_s=10)
        await fake.wait_for(lambda: runner.delivery.maybe_unreachable("fake", "c9"))
        assert await runner.store.is_unreachable("fake", "c9")
        # A later reply to the chat (here: sent proactively) is not even attempted.
        calls = len([s for s in fake.stamps if s.chat_id == "c9"])
        ids = await runner.delivery.deliver_final(ReplyTarget("fake", "c9", None, None),
                                                  "Proactive note.", session_id=None)
        assert ids == []
        assert len([s for s in fake.stamps if s.chat_id == "c9"]) == calls
    async with gateway(tmp_path, model, adapter=fake) as (runner, fake):
        assert runner.delivery.maybe_unreachable("fake", "c9")  # remembered across restarts
        rule.count = 0  # the user unblocked the bot and writes again
        await fake.inject("I'm back", chat_id="c9", user_id="u1")
        await fake.wait_for(lambda: "Welcome back." in fake.messages("c9"), timeout_s=10)
        await fake.wait_turns(2, timeout_s=10)
        assert not runner.delivery.maybe_unreachable("fake", "c9")
        assert not await runner.store.is_unreachable("fake", "c9")
        states = [s for s, _ in _outbox(tmp_path)]
        assert states == ["failed", "failed", "delivered"]
