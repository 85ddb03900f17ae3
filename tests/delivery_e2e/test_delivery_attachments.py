"""An attachment that failed to send is never recorded as delivered (issue 13, deliverable 9).

Through the real delivery path: the fake model answers with a `MEDIA:` line, the FakeAdapter is
scripted to fail the attachment send, and the test reads the outbox row in state.db and what
the chat shows.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from adapters.fake import FakeAdapter
from gateway.delivery.service import DeliveryService
from storage import StateStore
from tests.delivery_e2e.support import TimedFakeAdapter, chat_cache, profile_files
from tests.fakes.openai_server import text
from tests.integration.harness import gateway


def _picture(home: Path, chat_id: str = "c1") -> Path:
    """A picture in the chat's cache (a file a reply in that chat may attach)."""
    picture = chat_cache(home, chat_id) / "chart.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    return picture


def _outbox(home: Path) -> list[tuple[str, str, str | None]]:
    with sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT state, text, last_error FROM outbox ORDER BY id").fetchall()


def _chart_reply_failing(home: Path, model, kind: str, **kw: float) -> TimedFakeAdapter:
    """The model answers with a chart; the platform fails the chart's first send with `kind`."""
    model.enqueue(text(f"Here is the chart.\nMEDIA:{_picture(home)}"))
    fake = TimedFakeAdapter()
    fake.fail_next(kind, op="media", **kw)
    return fake


async def test_a_refused_attachment_marks_the_reply_failed_and_the_chat_is_told(
    tmp_path: Path, model
) -> None:
    fake = _chart_reply_failing(tmp_path, model, "too_long")  # e.g. over the size limit
    async with gateway(tmp_path, model, adapter=fake) as (_runner, fake):
        await fake.inject("chart please", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=10)
        await fake.wait_for(lambda: len(fake.messages("c1")) == 2, timeout_s=5)
        assert fake.messages("c1") == ["Here is the chart.",
                                       "⚠️ Attachment not sent: chart.png (too_long)."]
        assert fake.media("c1") == []
    [(state, body, error)] = _outbox(tmp_path)
    assert (state, body) == ("failed", "Here is the chart.")
    assert error is not None and "attachment not sent: chart.png" in error


async def test_a_rate_limited_attachment_is_sent_again_before_the_reply_counts_as_delivered(
    tmp_path: Path, model
) -> None:
    fake = _chart_reply_failing(tmp_path, model, "rate_limited", retry_after=0.3)
    async with gateway(tmp_path, model, adapter=fake) as (_runner, fake):
        await fake.inject("chart please", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=10)
        assert fake.media("c1") == []
        assert _outbox(tmp_path)[0][0] == "sent"  # the text is out, the file is not
        await fake.wait_for(lambda: len(fake.media("c1")) == 1, timeout_s=5)
        await fake.wait_for(lambda: _outbox(tmp_path)[0][0] == "delivered", timeout_s=5)
        assert fake.messages("c1") == ["Here is the chart."]
        media_calls = [s for s in fake.stamps if s.op == "media"]
        assert [s.ok for s in media_calls] == [False, True]
        assert media_calls[1].at - media_calls[0].at >= 0.3 * 0.95  # the hint was honoured


async def test_recovery_sends_the_attachments_of_a_reply_whose_text_went_out(
    tmp_path: Path,
) -> None:
    picture = _picture(tmp_path, "g1")  # rows recorded before folders were kept per chat
    fake = FakeAdapter("fake")
    async with await StateStore.open(tmp_path / "state.db") as store:
        # A crash after the text was sent and before the attachment: the rows are `sent`.
        ids = []
        for _ in range(2):
            oid = await store.outbox_add(
                platform="fake", chat_id="g1", text="The chart:", chat_type="group",
                attachments=[{"path": str(picture), "as_document": False, "as_voice": False}])
            assert await store.outbox_mark_sent(oid, ["m-old"])
            ids.append(oid)
        fake.fail_next("forbidden", op="media")  # the first row's file is refused
        delivery = DeliveryService({"fake": fake}, store, files=profile_files(tmp_path))
        assert await delivery.recover() == (0, 0)
        rows = [await store.outbox_get(i) for i in ids]
        await delivery.close()
    assert [r.state for r in rows if r is not None] == ["failed", "delivered"]
    assert len(fake.media("g1")) == 1  # the second row's file; no text was sent again
    assert fake.messages("g1") == ["⚠️ Attachment not sent: chart.png (forbidden)."]


async def test_a_chat_that_takes_no_files_gets_a_note_instead(tmp_path: Path, model) -> None:
    picture = _picture(tmp_path)
    model.enqueue(text(f"Here is the chart.\nMEDIA:{picture}"))
    async with gateway(tmp_path, model, adapter=FakeAdapter("fake", media=False)) as (
        _runner, fake,
    ):
        await fake.inject("chart please", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=10)
        assert fake.messages("c1") == [
            "Here is the chart.\n\n⚠️ Attachment not sent: chart.png (this chat takes no files)"]
        assert [c.op for c in fake.calls if c.op == "media"] == []
    assert [row[0] for row in _outbox(tmp_path)] == ["delivered"]
