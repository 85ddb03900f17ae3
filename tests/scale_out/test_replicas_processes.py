"""Replicas as real processes: 2-3 `hermes gateway run` on one PostgreSQL database (created
by the test), the fake Telegram Bot API and the fake model.

- Webhook mode behind a round-robin load balancer: consecutive updates of one chat land on
  different replicas; every message is answered once, in order per chat.
- `kill -9` of the replica that owns busy sessions: another takes them over after the lease
  runs out; nothing is lost, nothing answered twice, order kept.
- Long polling: one replica (the leader) polls; `kill -9` of it hands polling over.

Leases are short here (3 s) so a takeover fits in the test's time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.gateway_process import until
from tests.fakes.openai_server import FakeOpenAIServer
from tests.scale_out.replica_support import (
    LoadBalancer,
    Replica,
    ReplicaSet,
    answering,
    echoed,
    free_port,
    wait_live,
)
from tests.telegram.fake_bot_api import FakeBotApi

SECRET = "replica-webhook-secret"
USERS = [5001, 5002, 5003, 5004]


def _user(uid: int) -> dict[str, Any]:
    return {"id": uid, "is_bot": False, "first_name": f"U{uid}"}


def answered(api: FakeBotApi, chat: str) -> list[str]:
    """The messages of `chat` answered, in the order the answers show them."""
    return echoed(m.text for m in api.bot_messages(chat))


@pytest.fixture
async def telegram() -> AsyncIterator[FakeBotApi]:
    async with FakeBotApi() as api:
        yield api


def _tg(api: FakeBotApi, **extra: Any) -> dict[str, Any]:
    return {"telegram": {"enabled": True, **api.settings(), "poll_timeout_s": 1,
                         "allowed_users": [str(u) for u in USERS], **extra}}


@pytest.fixture
async def webhook_set(tmp_path: Path, replica_db: str, telegram: FakeBotApi
                      ) -> AsyncIterator[Callable[..., Any]]:
    sets: list[tuple[ReplicaSet, LoadBalancer]] = []

    async def make(n: int, model: FakeOpenAIServer) -> tuple[ReplicaSet, LoadBalancer]:
        ports = [free_port() for _ in range(n)]
        lb = LoadBalancer([f"http://127.0.0.1:{p}" for p in ports])
        await lb.start()

        def platforms(r: Replica) -> dict[str, Any]:
            r.webhook_port = ports[int(r.name[1:])]
            return _tg(telegram, mode="webhook", webhook={
                "host": "127.0.0.1", "port": r.webhook_port, "path": "/tg",
                "url": f"{lb.url}/tg", "secret_token": SECRET})

        rs = ReplicaSet(tmp_path, replica_db, n, model_url=model.base_url, platforms=platforms)
        sets.append((rs, lb))
        await rs.start_all()
        await until(lambda: telegram.webhook is not None, "a webhook", timeout=60)
        await wait_live(rs, n)
        return rs, lb

    yield make
    for rs, lb in sets:
        await rs.stop_all()
        await lb.stop()


async def _all_answered(api: FakeBotApi, rs: ReplicaSet, want: dict[str, list[str]],
                        timeout: float = 60) -> None:
    def done() -> bool:
        return all(len(answered(api, chat)) >= len(texts) for chat, texts in want.items())

    try:
        await until(done, "every message answered", timeout=timeout)
    except AssertionError:
        got = {chat: answered(api, chat) for chat in want}
        raise AssertionError(f"not every message answered: {got}\n{rs.logs()}") from None
    await asyncio.sleep(1.5)  # room for a wrong duplicate to show up


async def test_webhooks_spread_over_three_replicas_are_answered_once_in_order(
        webhook_set: Callable[..., Any], telegram: FakeBotApi) -> None:
    async with FakeOpenAIServer(responder=answering()) as model:
        rs, lb = await webhook_set(3, model)
        chats = {telegram.private_chat(u): u for u in USERS}
        want: dict[str, list[str]] = {c: [] for c in chats}
        for i in range(5):
            for chat, uid in chats.items():
                text = f"u{uid} m{i}"
                want[chat].append(text)
                telegram.send_user(chat, text, user=_user(uid))
        await _all_answered(telegram, rs, want)
        for chat in chats:
            assert answered(telegram, chat) == want[chat]  # once each, in order
        assert len({backend for backend, _ in lb.forwarded}) == 3  # spread over all three
        owners = await rs.query("SELECT DISTINCT holder FROM session_leases")
        assert owners, "the sessions were worked under leases"


async def test_kill9_of_the_owner_of_busy_sessions_loses_nothing(
        webhook_set: Callable[..., Any], telegram: FakeBotApi) -> None:
    async with FakeOpenAIServer(responder=answering(delay_s=1.5)) as model:
        rs, lb = await webhook_set(2, model)
        chats = {telegram.private_chat(u): u for u in USERS[:2]}
        want: dict[str, list[str]] = {c: [] for c in chats}

        def send(i: int, only: str | None = None) -> None:
            for chat, uid in chats.items():
                if only is not None and chat != only:
                    continue
                text = f"u{uid} m{i}"
                want[chat].append(text)
                telegram.send_user(chat, text, user=_user(uid))

        send(0)
        await until(lambda: len(model.requests) >= 2, "both turns at the model", timeout=30)
        owner = await rs.owner_of(f"%:{USERS[0]}")
        assert owner is not None, rs.logs()
        # the second chat gets more, queued behind its running turn; the first gets nothing
        # more: its message is answered only if the takeover re-runs the killed turn
        second = telegram.private_chat(USERS[1])
        send(1, only=second)
        await until(lambda: not telegram.pending, "the updates delivered", timeout=30)
        rs.kill9(owner)  # mid-turn, with events waiting in its sessions' lines
        await rs.wait(owner)
        send(2, only=second)
        await _all_answered(telegram, rs, want, timeout=60)
        for chat in chats:
            assert answered(telegram, chat) == want[chat], (
                "\n".join(repr(m.text) for m in telegram.bot_messages(chat)))
        survivor = next(r for r in rs.replicas if r is not owner)
        assert await rs.owner_of(f"%:{USERS[0]}") in (survivor, None)
        held = await rs.query("SELECT COUNT(*) AS n FROM inbound_events WHERE held IS NOT NULL")
        assert held[0]["n"] == 0


async def test_kill9_of_the_polling_leader_hands_polling_over(
        tmp_path: Path, replica_db: str, telegram: FakeBotApi) -> None:
    async with FakeOpenAIServer(responder=answering()) as model:
        rs = ReplicaSet(tmp_path, replica_db, 2, model_url=model.base_url,
                        platforms=lambda r: _tg(telegram))
        try:
            await rs.start_all()
            await wait_live(rs, 2)
            chat = telegram.private_chat(USERS[0])
            want = {chat: ["first"]}
            telegram.send_user(chat, "first", user=_user(USERS[0]))
            await _all_answered(telegram, rs, want)
            await asyncio.sleep(3)  # both replicas up for a while: still one poller
            assert telegram.superseded == 0  # no long poll was cut short by a second poller
            leader = await rs.leader_of("telegram:%")
            assert leader is not None, rs.logs()
            rs.kill9(leader)
            await rs.wait(leader)
            for text in ("second", "third"):
                want[chat].append(text)
                telegram.send_user(chat, text, user=_user(USERS[0]))
            await _all_answered(telegram, rs, want, timeout=45)
            assert answered(telegram, chat) == ["first", "second", "third"]
            survivor = next(r for r in rs.replicas if r is not leader)
            assert await rs.leader_of("telegram:%") is survivor
        finally:
            await rs.stop_all()
