"""Start-up recovery finds a final that reached Slack just before a crash and does not send it
again (long chaos run, seed 772018: msg001580 answered live and again as "♻️ Recovered reply",
the process was killed between chat.postMessage and the outbox's "delivered" mark)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gateway.delivery.service import RECOVERED_MARKER, DeliveryService, ReplyTarget
from storage import StateStore
from tests.slack.conftest import Running

DM = ReplyTarget("slack", "D0001", None, "1.000100", "dm")
CHANNEL = ReplyTarget("slack", "C0001", None, "1.000200", "channel")  # replies in its thread


def _killed_before_the_mark(db: Path, outbox_id: int) -> None:
    """What a SIGKILL right after the send leaves: the row still open."""
    with sqlite3.connect(db) as c:
        c.execute("UPDATE outbox SET state = 'pending', platform_message_ids = '[]' "
                  "WHERE id = ?", (outbox_id,))


@pytest.mark.parametrize("target", [DM, CHANNEL], ids=["dm-history", "thread-replies"])
async def test_a_final_already_in_the_chat_is_not_sent_again(
        running: Running, tmp_path: Path, target: ReplyTarget) -> None:
    db = tmp_path / "state.db"
    async with await StateStore.open(db) as store:
        live = DeliveryService({"slack": running.adapter}, store, boot_id="first")
        ids = await live.deliver_final(target, "The answer is 42.", session_id=None)
        await live.close()
    assert ids
    oid = _only_outbox_id(db)
    _killed_before_the_mark(db, oid)

    async with await StateStore.open(db) as store:
        recovery = DeliveryService({"slack": running.adapter}, store, boot_id="second")
        assert await recovery.recover() == (0, 0)
        row = await store.outbox_get(oid)
        assert row is not None and row.state == "delivered"
        assert row.platform_message_ids == ids
        await recovery.close()
    texts = [m.text for m in running.fake.bot_messages(target.chat_id)]
    assert texts == ["The answer is 42."]


async def test_a_final_not_in_the_chat_is_still_recovered(running: Running,
                                                          tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    async with await StateStore.open(db) as store:
        oid = await store.outbox_add(platform="slack", chat_id="D0001", text="Lost answer.",
                                     chat_type="dm")
        recovery = DeliveryService({"slack": running.adapter}, store, boot_id="second")
        assert await recovery.recover() == (1, 0)
        row = await store.outbox_get(oid)
        assert row is not None and row.state == "delivered"
        await recovery.close()
    assert [m.text for m in running.fake.bot_messages("D0001")] == [
        f"{RECOVERED_MARKER}\n\nLost answer."]


def _only_outbox_id(db: Path) -> int:
    with sqlite3.connect(db) as c:
        [(oid,)] = c.execute("SELECT id FROM outbox").fetchall()
    return int(oid)
