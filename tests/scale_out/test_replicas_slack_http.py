"""Slack's Events API (`slack.mode: http`) served by three `hermes gateway run` replicas on
one PostgreSQL database behind a round-robin load balancer, with the fake Slack (real
slack-bolt in the gateway, faked at the wire) and the fake model.

Consecutive events of one DM land on different replicas, and every event is sent again as
Slack retries it (same event_id, `X-Slack-Retry-Num: 1`) right after the original, to
another replica than the original's: each message is answered once, in order per DM."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

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
from tests.slack.fake_slack import FakeSlack

PATH = "/slack/events"
DMS = {"D0001": "U0001", "D0002": "U0002", "D0003": "U0003", "D0004": "U0004"}


async def _serving(fake: FakeSlack, rs: ReplicaSet, urls: list[str], timeout: float = 60
                   ) -> None:
    """Until every replica's Events API endpoint answers a signed url_verification."""
    async def poll() -> None:
        for url in urls:
            fake.events_url = url
            while True:
                try:
                    status, body = await fake.url_verification("ready?")
                except OSError:
                    status, body = 0, ""
                if status == 200 and "ready?" in body:
                    break
                await asyncio.sleep(0.2)

    try:
        await asyncio.wait_for(poll(), timeout)
    except TimeoutError:
        raise AssertionError("the Events API endpoints are not up\n" + rs.logs()) from None


async def test_slack_events_spread_over_three_replicas_with_retries_are_answered_once(
        tmp_path: Path, replica_db: str) -> None:
    async with FakeOpenAIServer(responder=answering()) as model, FakeSlack() as fake:
        for dm, user in DMS.items():
            fake.add_channel(dm, "im")
            fake.add_user(user, user.lower())
        ports = [free_port() for _ in range(3)]
        urls = [f"http://127.0.0.1:{p}{PATH}" for p in ports]
        lb = LoadBalancer([f"http://127.0.0.1:{p}" for p in ports])

        def platforms(r: Replica) -> dict[str, Any]:
            return {"slack": {
                "enabled": True, "mode": "http", "bot_token": fake.bot_token,
                "signing_secret": fake.signing_secret, "api_base_url": fake.api_url,
                "http": {"host": "127.0.0.1", "port": ports[int(r.name[1:])], "path": PATH},
                "allowed_users": sorted(DMS.values())}}

        rs = ReplicaSet(tmp_path, replica_db, 3, model_url=model.base_url,
                        platforms=platforms)
        await lb.start()
        try:
            await rs.start_all()
            await wait_live(rs, 3)
            await _serving(fake, rs, urls)
            fake.mode = "http"
            want: dict[str, list[str]] = {dm: [] for dm in DMS}
            retried: list[tuple[str, str, int]] = []  # (original's replica, retry's, status)
            for i in range(4):
                for dm, user in DMS.items():
                    text = f"{dm} m{i}"
                    want[dm].append(text)
                    fake.events_url = lb.url + PATH
                    await fake.user_message(text, channel=dm, user=user)
                    first = lb.forwarded[-1][0]
                    again = lb.backends[(lb.backends.index(first) + 1 + i % 2) % 3]
                    fake.events_url = again + PATH
                    assert fake.last_delivered is not None
                    status, _ = await fake.post_event(fake.last_delivered, retry_num=1)
                    retried.append((first, again, status))

            def done() -> bool:
                return all(len(echoed(m.text for m in fake.bot_messages(dm))) >= len(texts)
                           for dm, texts in want.items())

            try:
                await until(done, "every message answered", timeout=30)
            except AssertionError:
                got = {dm: echoed(m.text for m in fake.bot_messages(dm)) for dm in DMS}
                raise AssertionError(f"not every message answered: {got}\n{rs.logs()}"
                                     ) from None
            await asyncio.sleep(1.5)  # room for a wrong duplicate to show up
            for dm in DMS:
                assert echoed(m.text for m in fake.bot_messages(dm)) == want[dm]
            sent = lb.forwarded[-4 * len(DMS):]
            assert all(status == 200 for _, status in sent)  # the originals acked
            assert {backend for backend, _ in sent} == set(lb.backends)  # spread over all
            assert all(status == 200 for _, _, status in retried)  # the retries acked
            rows = await rs.query(
                "SELECT s.session_key, m.content FROM messages m JOIN sessions s"
                " ON s.id = m.session_id WHERE m.role = 'user' ORDER BY m.id")
            by_dm: dict[str, list[str]] = {}
            for r in rows:
                by_dm.setdefault(r["content"].split()[0], []).append(r["content"])
            assert by_dm == want  # stored once each, in order
            held = await rs.query("SELECT COUNT(*) AS n FROM inbound_events"
                                  " WHERE held IS NOT NULL")
            assert held[0]["n"] == 0
        finally:
            await rs.stop_all()
            await lb.stop()
