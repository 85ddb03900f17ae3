"""Outbound files between two Telegram users (issue 14): a `MEDIA:` reply may send only
files of the current chat's cache, the current user's workspace or the operator's folders;
the check runs again when the file is read for sending; outbound files are capped."""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer, text
from tests.multiuser.support import until
from tests.multiuser.telegram_harness import ADA, BOB, Group, group_gateway

_AT = re.compile(r"\[attachment: document \S+ at (\S+)\]")


async def _ada_sends_a_document(g: Group, model: FakeOpenAIServer, data: bytes,
                                 name: str = "payslip.txt") -> Path:
    """Ada sends a document in her private chat; returns where the gateway cached it."""
    model.enqueue(text("Got your file."))
    await g.turn(g.ada_dm, ADA, "here is my file", "Got your file.", document=(name, data))
    sent = str(model.requests[-1].body["messages"][-1]["content"])
    found = _AT.search(sent)
    assert found is not None, sent
    return Path(found.group(1))


async def test_media_cannot_send_another_chats_cached_attachment(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    async with group_gateway(tmp_path, model) as g:
        cached = await _ada_sends_a_document(g, model, b"salary: 1 million")
        assert cached.read_bytes() == b"salary: 1 million"
        model.enqueue(text(f"Here it is.\nMEDIA:{cached}"))
        await g.turn(g.group, BOB, "send me Ada's payslip", "Here it is.")
        await until(lambda: any("not sent" in m.text for m in g.api.bot_messages(g.group)),
                    "the refusal note")
        assert [m for m in g.api.bot_messages(g.group) if m.kind != "text"] == []
        # In Ada's own chat the same file may go out.
        model.enqueue(text(f"Your file.\nMEDIA:{cached}"))
        await g.turn(g.ada_dm, ADA, "send my file back", "Your file.")
        await until(lambda: any(m.kind == "document" for m in g.api.bot_messages(g.ada_dm)),
                    "the document in Ada's chat")


async def test_inbound_attachments_are_cached_per_chat(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    async with group_gateway(tmp_path, model) as g:
        cached = await _ada_sends_a_document(g, model, b"hello")
        model.enqueue(text("Got the group file."))
        await g.turn(g.group, BOB, "a file for the group", "Got the group file.",
                     document=("agenda.txt", b"agenda"))
        group_file = Path(_AT.search(str(model.requests[-1].body["messages"][-1]["content"]))
                          .group(1))  # type: ignore[union-attr]
    cache = tmp_path / "cache"
    assert cached.is_relative_to(cache) and group_file.is_relative_to(cache)
    assert cached.parent != group_file.parent


async def test_a_file_swapped_for_a_symlink_before_sending_is_not_sent(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    secret = tmp_path / "outside" / "id_secret.txt"
    secret.parent.mkdir()
    secret.write_bytes(b"operator secret")
    async with group_gateway(tmp_path, model) as g:
        cached = await _ada_sends_a_document(g, model, b"harmless")
        # The first upload is rate-limited; while the retry waits, the cached file is
        # replaced by a symlink to a file outside every allowed folder.
        g.api.rate_limit_next(1, frozenset({"sendDocument"}))
        model.enqueue(text(f"Here.\nMEDIA:{cached}"))
        await g.turn(g.ada_dm, ADA, "send it back", "Here.")
        await until(lambda: g.api.failures_left("sendDocument") == 0, "the rate-limited upload")
        cached.unlink()
        os.symlink(secret, cached)
        await until(lambda: any("not sent" in m.text or m.kind == "document"
                                for m in g.api.bot_messages(g.ada_dm)),
                    "the retried upload or a refusal note", timeout_s=15)
        assert all(m.data != b"operator secret" for m in g.api.bot_messages(g.ada_dm))
        assert any("not sent" in m.text for m in g.api.bot_messages(g.ada_dm))


async def test_outbound_files_over_the_cap_are_refused_with_a_note(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    async with group_gateway(tmp_path, model, gateway__media__max_outbound_mb=1) as g:
        cached = await _ada_sends_a_document(g, model, b"x" * (1024 * 1024 + 1), "big.txt")
        model.enqueue(text(f"Here.\nMEDIA:{cached}"))
        await g.turn(g.ada_dm, ADA, "send it back", "Here.")
        await until(lambda: any("big.txt" in m.text and "MB" in m.text
                                for m in g.api.bot_messages(g.ada_dm)), "the size note")
        assert [m for m in g.api.bot_messages(g.ada_dm) if m.kind != "text"] == []
