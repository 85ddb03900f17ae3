"""Start-up recovery finishes the dead process's streaming preview in place, with attachments."""

from __future__ import annotations

from pathlib import Path

from adapters.fake import FakeAdapter
from gateway.delivery.service import RECOVERED_MARKER, DeliveryService
from gateway.events import OutboundMessage
from storage import StateStore
from tests.delivery_e2e.support import chat_cache, profile_files


async def test_recovery_edits_the_stale_preview_and_sends_the_attachment(tmp_path: Path) -> None:
    picture = chat_cache(tmp_path, "g1") / "chart.png"
    picture.write_bytes(b"\x89PNG fake")
    fake = FakeAdapter("fake")
    # What the crashed process left behind: a preview with the streaming cursor …
    preview = await fake.send(OutboundMessage(chat_id="g1", text="The answer is ▌",
                                              formatted=False))
    async with await StateStore.open(tmp_path / "state.db") as store:
        # … and the final reply recorded in the outbox before its send.
        oid = await store.outbox_add(
            platform="fake", chat_id="g1", text="The answer is 42.", chat_type="group",
            preview_message_id=preview.message_ids[0],
            attachments=[{"path": str(picture), "as_document": False, "as_voice": False}])
        delivery = DeliveryService({"fake": fake}, store, files=profile_files(tmp_path))
        resent, expired = await delivery.recover()
        assert (resent, expired) == (1, 0)
        texts = fake.messages("g1")
        assert texts == [f"{RECOVERED_MARKER}\n\nThe answer is 42."]  # one message, no cursor
        assert fake.sent("g1")[0].message_id == preview.message_ids[0]  # edited in place
        assert [Path(a.path).name for m in fake.media("g1") for a in m.attachments] == [
            "chart.png"]
        item = await store.outbox_get(oid)
        assert item.state == "delivered" and item.chat_type == "group"
        await delivery.close()
