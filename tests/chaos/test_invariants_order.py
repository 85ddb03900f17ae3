"""The chaos suite's order rule judges the delivery the gateway accepted, not the first one.

Found by the long run (seed 772018): msg000099 (Slack DM) was refused on its first delivery
(storage full: no ack), came back with Slack's retry after msg000115 had been accepted and
stored, and was stored after it. The gateway kept the order it accepted messages in; the rule
compared with the first delivery and reported it. Here the fake Slack's socket is driven by a
raw websocket client playing the gateway's part (ack or not), and state.db is a real store.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import aiohttp

from storage.store import StateStore
from tests.chaos.invariants import Verdict, check
from tests.chaos.platforms import Sent, SlackDriver


async def _run(tmp_path: Path, *, refuse_first: bool, stored: list[str]) -> Verdict:
    driver = SlackDriver(random.Random(1), users=1)
    await driver.start()
    try:
        dm = driver.convs[0]
        sents = [Sent(f"msg00000{i}", dm, f"msg00000{i} hello", 0.0, seq=i) for i in (1, 2)]
        url = f"ws://127.0.0.1:{driver.fake.port}/socket/1"
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(url) as ws:
                await ws.receive_json()  # hello
                for s in sents:
                    await driver.send(s)
                for _ in sents:
                    env: dict[str, Any] = await ws.receive_json()
                    if refuse_first and env["payload"]["event"]["text"] == sents[0].text:
                        continue  # the gateway could not record it: no ack
                    await ws.send_str(json.dumps({"envelope_id": env["envelope_id"]}))
                await driver.fake.wait_for(lambda: len(driver.fake.acked) == (
                    1 if refuse_first else 2))
            if refuse_first:  # Slack sends the un-acked envelope again on the next connection
                async with http.ws_connect(url) as ws:
                    await ws.receive_json()  # hello
                    env = await ws.receive_json()
                    assert env["payload"]["event"]["text"] == sents[0].text
                    await ws.send_str(json.dumps({"envelope_id": env["envelope_id"]}))
                    await driver.fake.wait_for(lambda: len(driver.fake.acked) == 2)
        db = tmp_path / "state.db"
        async with await StateStore.open(db) as store:
            session = await store.create_session(source="slack", chat_id=dm.chat,
                                                 chat_type="dm", user_id=dm.user)
            await store.append_messages(session.id, [
                {"role": "user", "content": f"{m} hello"} for m in stored])
        return check(sents, [driver], db, last_pid=None, peak_rss_mb=0.0,
                     rss_limit_mb=1000.0, rss_growth=[])
    finally:
        await driver.stop()


async def test_a_refused_delivery_retried_later_may_be_stored_later(tmp_path: Path) -> None:
    verdict = await _run(tmp_path, refuse_first=True, stored=["msg000002", "msg000001"])
    assert verdict.accepted == 2
    assert verdict.out_of_order == []


async def test_accepted_in_order_but_stored_reversed_is_still_reported(tmp_path: Path) -> None:
    verdict = await _run(tmp_path, refuse_first=False, stored=["msg000002", "msg000001"])
    assert verdict.accepted == 2
    assert verdict.out_of_order == [
        "slack:D100:-:U100: msg000002 arrived after msg000001 but was stored before it"]
