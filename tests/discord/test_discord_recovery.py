"""Start-up recovery does not post a final twice on Discord: every part of a final carries a
nonce derived from its outbox row (discord.py sends it with enforce_nonce), and Discord returns
the message already created with that nonce (for a few minutes) instead of posting another.
Long chaos run, seed 772018: a kill between the send and the outbox's "delivered" mark."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gateway.delivery.service import DeliveryService, ReplyTarget
from storage import StateStore
from tests.adapters_contract.harness_discord import DiscordHarness
from tests.discord.fake_payloads import DM_ALICE


async def test_recovered_final_sent_just_before_a_kill_is_not_posted_again(
        discord_h: DiscordHarness, tmp_path: Path) -> None:
    target = ReplyTarget("discord", str(DM_ALICE), None, None, "dm")
    db = tmp_path / "state.db"
    async with await StateStore.open(db) as store:
        live = DeliveryService({"discord": discord_h.adapter}, store, boot_id="first")
        ids = await live.deliver_final(target, "The answer is 42.", session_id=None)
        await live.close()
    with sqlite3.connect(db) as c:  # killed after the send, before the "delivered" mark
        [(oid,)] = c.execute("SELECT id FROM outbox").fetchall()
        c.execute("UPDATE outbox SET state = 'pending' WHERE id = ?", (oid,))

    async with await StateStore.open(db) as store:
        recovery = DeliveryService({"discord": discord_h.adapter}, store, boot_id="second")
        await recovery.recover()
        row = await store.outbox_get(oid)
        assert row is not None and row.state == "delivered"
        assert row.platform_message_ids == ids
        await recovery.close()
    assert [m.content for m in discord_h.fake.bot_messages(DM_ALICE)] == ["The answer is 42."]
    posted = [p for m, _c, p in discord_h.fake.payloads if m == "POST"]
    assert len(posted) == 2 and posted[0]["nonce"] == posted[1]["nonce"]
    assert all(p["enforce_nonce"] is True for p in posted)
