"""The restart race (issue 15): start-up recovery and the live path never both take a message.

Each test restarts the real `GatewayRunner` over the same state.db and holds start-up recovery
at a seam on the wire: the fake platform's `send` of a recovery notice waits for the test
(`GatedAdapter`), and the fake model answers a chosen message only when the test lets it
(`ModelGate`). While recovery is held, the user writes; the test waits until the live path
has taken the message, lets recovery go on, and then checks what the user saw and what
state.db holds. Before the fix each test fails: the message is answered twice (or, in the
last one, out of order).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from adapters.fake import FakeAdapter
from gateway.delivery.service import DeliveryService, ReplyTarget
from gateway.events import OutboundMessage, SendResult
from gateway.paths import ProfilePaths, ensure_profile_dirs
from gateway.recovery import HELD_NOTICE, RESUME_NOTICE
from gateway.runner import GatewayRunner
from storage import StateStore
from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest, Reply, hang
from tests.gateway.runtime_harness import make_config, runner_for

QUEUE: dict[str, Any] = {"gateway__busy_mode": "queue", "gateway__burst_merge_s": 0,
                         "gateway__drain_timeout_s": 0.1}


class GatedAdapter(FakeAdapter):
    """The fake platform; the first send of a text that contains `hold_text` sets `reached`
    and waits until `release` is set. Holding that send holds start-up recovery (or a live
    reply)."""

    def __init__(self, hold_text: str) -> None:
        super().__init__("fake")
        self.hold_text = hold_text
        self.reached = asyncio.Event()
        self.release = asyncio.Event()

    async def send(self, message: OutboundMessage) -> SendResult:
        if self.hold_text in message.text and not self.reached.is_set():
            self.reached.set()
            await self.release.wait()
        return await super().send(message)


def _user_text(req: RecordedRequest) -> str:
    users = [m for m in req.messages if m.get("role") == "user"]
    return str(users[-1].get("content") or "") if users else ""


class ModelGate:
    """The fake model's responder: echoes, but answers `gated` texts only once `open` is
    set. Installed on the server for the test's lifetime."""

    def __init__(self, model: FakeOpenAIServer, *gated: str) -> None:
        self.gated = set(gated)
        self.open = asyncio.Event()
        model.responder = self

    async def __call__(self, req: RecordedRequest) -> Reply:
        text = _user_text(req)
        if text in self.gated:
            await self.open.wait()
        return Reply(text=f"echo: {text}")


def asked(model: FakeOpenAIServer, text: str) -> int:
    """How many model requests had `text` as the user's latest message."""
    return sum(1 for r in model.requests if _user_text(r) == text)


async def until(predicate: Callable[[], Awaitable[bool]], timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not await predicate():
            await asyncio.sleep(0.01)


@asynccontextmanager
async def starting(home: Path, model: FakeOpenAIServer, adapter: GatedAdapter,
                   **overrides: Any) -> AsyncIterator[tuple[GatewayRunner, asyncio.Task[None]]]:
    """A runner whose `start()` runs in a task (the test holds it at the seam)."""
    paths = ensure_profile_dirs(ProfilePaths(home))
    runner = GatewayRunner(make_config(model, **overrides), paths, adapters={"fake": adapter},
                           health_port=0, take_locks=False)
    task = asyncio.create_task(runner.start(), name="test-runner-start")
    try:
        yield runner, task
    finally:
        adapter.release.set()
        with contextlib.suppress(Exception):
            await task
        await runner.shutdown()


async def session_users(runner: GatewayRunner, chat_id: str) -> list[str]:
    """The user messages stored for the direct chat `chat_id` of user u1."""
    session = await runner.store.find_by_session_key(f"fake:dm:{chat_id}")
    if session is None:
        return []
    return [m["content"] for m in await runner.store.load_history(session.id)
            if m["role"] == "user"]


async def quiet(runner: GatewayRunner, fake: FakeAdapter) -> None:
    """Until no session runs or queues a turn, and a little longer for a stray duplicate."""
    await until(lambda: _idle(runner))
    await asyncio.sleep(0.3)
    await until(lambda: _idle(runner))


async def _idle(runner: GatewayRunner) -> bool:
    m = runner.manager
    return not m.queue_depths() and not any(m.is_busy(k) for k in list(m._workers))


async def _answered_then_one_cut_off(home: Path, model: FakeOpenAIServer,
                                     chats: list[str]) -> None:
    """First boot: each chat of `chats` (oldest first) is answered; then "pending" in chat
    c9 hangs and the gateway shuts down, so c9 is a turn the restart cut off (the next start
    sends RESUME_NOTICE there: the seam)."""
    async with runner_for(home, model, **QUEUE) as (runner, fake):
        for chat in chats:
            await fake.inject(f"hello {chat}", chat_id=chat)
            await fake.wait_for(lambda c=chat: f"echo: hello {c}" in fake.messages(c))
        model.enqueue(hang(60))
        await fake.inject("pending", chat_id="c9")
        await fake.wait_for(lambda: asked(model, "pending") == 1)
    model.requests.clear()


async def test_unanswered_scan_does_not_rerun_a_message_the_live_path_stored(tmp_path, model):
    """Shape 2 (`unanswered_turn_found rerun=true`): recovery walks the sessions newest first;
    while it is held at a newer one, the oldest chat's user writes, the live path stores the
    message and waits for the model. Recovery must not take it for a turn the restart cut
    off."""
    await _answered_then_one_cut_off(tmp_path, model, ["c1", "c2", "c3"])
    gate = ModelGate(model, "while down")
    adapter = GatedAdapter(RESUME_NOTICE)
    async with starting(tmp_path, model, adapter, **QUEUE) as (runner, start):
        await asyncio.wait_for(adapter.reached.wait(), 10)  # recovery is at c9, c1 is next
        await adapter.inject("while down", chat_id="c1")

        async def taken() -> bool:  # stored by the live turn, or parked until recovery ends
            parked = getattr(runner.manager, "parked_count", 0)
            return parked == 1 or "while down" in await session_users(runner, "c1")

        await until(taken)
        adapter.release.set()
        await asyncio.wait_for(start, 10)
        gate.open.set()
        await adapter.wait_for(lambda: "echo: while down" in adapter.messages("c1"))
        await adapter.wait_for(lambda: "echo: pending" in adapter.messages("c9"))
        await quiet(runner, adapter)
        assert adapter.messages("c1").count("echo: while down") == 1, adapter.messages("c1")
        assert RESUME_NOTICE not in adapter.messages("c1")
        assert asked(model, "while down") == 1
        assert (await session_users(runner, "c1")).count("while down") == 1
        assert asked(model, "pending") == 1  # the turn really cut off is run again, once


async def test_held_scan_does_not_requeue_an_event_the_live_path_held(tmp_path, model):
    """Shape 1 (`held_events_requeued count=1`): while recovery is held, a new chat's user
    sends two messages; the second waits (held) behind the first. Recovery of held events
    must not read that row as one a restart caught waiting."""
    await _answered_then_one_cut_off(tmp_path, model, ["c1"])
    gate = ModelGate(model, "a")
    adapter = GatedAdapter(RESUME_NOTICE)
    async with starting(tmp_path, model, adapter, **QUEUE) as (runner, start):
        await asyncio.wait_for(adapter.reached.wait(), 10)
        await adapter.inject("a", chat_id="c5")
        await adapter.inject("b", chat_id="c5")

        async def b_held() -> bool:
            return any(h.event_id.startswith("ev-") and '"text":"b"' in h.payload
                       for h in await runner.store.inbound_held())

        await until(b_held)
        adapter.release.set()
        await asyncio.wait_for(start, 10)
        gate.open.set()
        await adapter.wait_for(lambda: "echo: b" in adapter.messages("c5"))
        await quiet(runner, adapter)
        answers = [m for m in adapter.messages("c5") if m.startswith("echo: ")]
        assert answers == ["echo: a", "echo: b"], adapter.messages("c5")
        assert HELD_NOTICE not in adapter.messages("c5")
        assert await session_users(runner, "c5") == ["a", "b"]
        assert asked(model, "b") == 1
        assert await runner.store.inbound_held() == []


async def test_recovered_events_come_before_what_arrived_during_recovery(tmp_path, model):
    """The other way round: recovery has taken a held event (a restart caught "second"
    queued behind "first") and is held before queueing it; meanwhile the platform delivers
    "second" again (same update) and the user sends "third". Each is answered once, in the
    order the user sent them."""
    model.enqueue(Reply(text="echo: hello"), hang(60))
    async with runner_for(tmp_path, model, **QUEUE) as (runner, fake):
        await fake.inject("hello", chat_id="c1")
        await fake.wait_for(lambda: "echo: hello" in fake.messages("c1"))
        await fake.inject("first", chat_id="c1")
        await fake.wait_for(lambda: asked(model, "first") == 1)
        second = (await fake.inject("second", chat_id="c1")).event
        await fake.wait_for(lambda: runner.manager.queue_depths().get("fake:dm:c1") == 1)
    model.requests.clear()
    gate = ModelGate(model, "first")
    adapter = GatedAdapter(HELD_NOTICE)
    async with starting(tmp_path, model, adapter, **QUEUE) as (runner, start):
        await asyncio.wait_for(adapter.reached.wait(), 10)  # "second" is claimed, not queued
        again = await adapter.inject("second", chat_id="c1", event_id=second.event_id)
        assert again.new is False  # the redelivery is a duplicate
        await adapter.inject("third", chat_id="c1")

        async def third_taken() -> bool:  # held by the live path (queued or parked)
            return any('"text":"third"' in h.payload for h in await runner.store.inbound_held())

        await until(third_taken)
        adapter.release.set()
        await asyncio.wait_for(start, 10)
        gate.open.set()
        await adapter.wait_for(lambda: any("third" in m for m in adapter.messages("c1")))
        await quiet(runner, adapter)
        users = await session_users(runner, "c1")
        assert users == ["hello", "first", "second", "third"], users
        answers = [m for m in adapter.messages("c1") if m.startswith("echo: ")]
        assert answers == ["echo: first", "echo: second", "echo: third"], answers


async def test_recovery_does_not_resend_a_final_that_is_being_sent_live(tmp_path):
    """Re-sending recorded finals at start-up vs live delivery: a final recorded by a live
    turn of this process and still being sent when recovery reads the outbox is not re-sent
    by recovery; the one an earlier process left unsent is, once."""
    async with await StateStore.open(tmp_path / "state.db") as store:
        target = ReplyTarget("fake", "c1", None, None, "dm")
        earlier = DeliveryService({"fake": FakeAdapter("fake")}, store)  # the dead process
        await earlier.record_final(target, "left unsent", session_id=None)
        adapter = GatedAdapter("live reply")
        delivery = DeliveryService({"fake": adapter}, store)
        live = asyncio.create_task(delivery.deliver_final(target, "live reply",
                                                          session_id=None))
        await asyncio.wait_for(adapter.reached.wait(), 10)  # recorded, being sent
        recovering = asyncio.create_task(delivery.recover())
        await until(lambda: _sent_once(adapter, "left unsent"))
        adapter.release.set()
        resent, _expired = await recovering
        await live
        assert resent == 1
        assert sum("live reply" in m for m in adapter.messages("c1")) == 1, \
            adapter.messages("c1")
        assert sum("left unsent" in m for m in adapter.messages("c1")) == 1
        assert await delivery.recover() == (0, 0)  # claimed: a second scan takes nothing
        assert await store.outbox_undelivered() == []


async def _sent_once(adapter: FakeAdapter, text: str) -> bool:
    return any(text in m for m in adapter.messages("c1"))


async def test_an_event_recorded_but_not_held_when_the_process_died_is_answered(tmp_path, model):
    """Dedup records vs held rows: the previous process recorded the event as seen (dedup,
    claimed by its boot) and was killed before holding it, so the platform did not get the
    offset confirmed and delivers it again. It is answered, once."""
    paths = ensure_profile_dirs(ProfilePaths(tmp_path))
    async with await StateStore.open(paths.state_db) as store:  # what the dead process wrote
        assert await store.record_if_new("fake", "ev-gap", claimed_by="dead-boot") is True
    async with runner_for(tmp_path, model, **QUEUE) as (runner, fake):
        assert (await fake.inject("lost?", chat_id="c1", event_id="ev-gap")).new is True
        await fake.wait_for(lambda: "echo: lost?" in fake.messages("c1"))
        again = await fake.inject("lost?", chat_id="c1", event_id="ev-gap")
        assert again.new is False  # taken once: now a repeat
        await quiet(runner, fake)
        assert fake.messages("c1").count("echo: lost?") == 1
        assert await session_users(runner, "c1") == ["lost?"]


async def test_events_settled_without_a_hold_stay_repeats_after_a_restart(tmp_path, model):
    """An event whose fate was decided without a hold (a command, a refused user) is settled:
    its redelivery after a restart is a repeat, not run again."""
    async with runner_for(tmp_path, model, **QUEUE) as (runner, fake):
        await fake.inject("/help", chat_id="c1", event_id="ev-cmd")
        await fake.wait_for(lambda: len(fake.messages("c1")) == 1)
        await fake.inject("hi", chat_id="c7", user_id="stranger", event_id="ev-refused")

        async def settled() -> bool:
            return await runner.store.inbound_held_count() == 0 and not await _claimed(runner)

        await until(settled)
    async with runner_for(tmp_path, model, **QUEUE) as (runner, fake):
        assert (await fake.inject("/help", chat_id="c1", event_id="ev-cmd")).new is False
        refused = await fake.inject("hi", chat_id="c7", user_id="stranger",
                                    event_id="ev-refused")
        assert refused.new is False


async def _claimed(runner: GatewayRunner) -> list[str]:
    rows = await runner.store._fetchall(  # the claims themselves are not part of any port
        "SELECT event_id FROM inbound_events WHERE claimed_by IS NOT NULL")
    return [r[0] for r in rows]
