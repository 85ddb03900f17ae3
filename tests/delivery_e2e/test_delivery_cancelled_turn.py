"""A turn cancelled while its recorded final goes out (an interrupt's grace ran out while
the chat's rate limit held the send) must not cut the send off: the answer still arrives,
before the chat's next one. Found by the long chaos run (seed 772018): the cut-off final
stayed pending, the next answer went out first, and the first came only after a restart,
as a recovered reply."""

from __future__ import annotations

import asyncio
from pathlib import Path

from adapters.fake import FakeAdapter
from gateway.delivery.service import DeliveryService, ReplyTarget
from gateway.events import OutboundMessage, SendResult
from storage import StateStore


class SlowFirstSend(FakeAdapter):
    """The first send waits (as behind a rate limit) before it goes out."""

    def __init__(self) -> None:
        super().__init__("fake")
        self.waits = [0.5]

    async def send(self, message: OutboundMessage) -> SendResult:
        if self.waits:
            await asyncio.sleep(self.waits.pop())
        return await super().send(message)


async def test_a_final_whose_turn_is_cancelled_mid_send_still_arrives_first(
        tmp_path: Path) -> None:
    fake = SlowFirstSend()
    target = ReplyTarget("fake", "c1", None, None, "dm")
    async with await StateStore.open(tmp_path / "state.db") as store:
        delivery = DeliveryService({"fake": fake}, store)
        first = await delivery.record_final(target, "first answer", session_id=None)
        turn = asyncio.create_task(delivery.send_final(first))
        await asyncio.sleep(0.1)
        turn.cancel()  # the turn's grace ran out while its final was on its way
        await asyncio.gather(turn, return_exceptions=True)
        await delivery.wait_earlier_finals(target)  # the next turn starts behind it
        await delivery.deliver_final(target, "second answer", session_id=None)
        assert fake.messages("c1") == ["first answer", "second answer"]
        assert [(await store.outbox_get(f)).state for f in (first.outbox_id,)] == ["delivered"]
        assert await store.outbox_undelivered() == []
        await delivery.close()
