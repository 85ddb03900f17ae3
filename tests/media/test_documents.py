"""Inbound documents reach the model as text (issue 18, deliverable 3): PDF, DOCX and text
files sent on Telegram; long texts cut (head and tail) and saved whole to the sender's
workspace; password-protected and damaged files give the user a clear reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.principals import folder_name
from tests.fakes.openai_server import FakeOpenAIServer, text
from tests.media.files import docx_bytes, pdf
from tests.multiuser.support import until
from tests.multiuser.telegram_harness import ADA, BOB, Group, group_gateway


def _user(model: FakeOpenAIServer) -> str:
    content: Any = model.requests[-1].body["messages"][-1]["content"]
    assert isinstance(content, str), content
    return content


async def _send(g: Group, model: FakeOpenAIServer, name: str, data: bytes,
                chat: str | None = None, who: dict[str, Any] = ADA) -> str:
    model.enqueue(text("Read it."))
    await g.turn(chat or g.ada_dm, who, "please read", "Read it.", document=(name, data))
    return _user(model)


async def test_pdf_docx_and_text_files_are_read(tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model) as g:
        sent = await _send(g, model, "report.pdf",
                           pdf(["Quarterly revenue rose by 12 percent.", "Costs fell in March."]))
        assert "[text of report.pdf (PDF, 2 pages):]" in sent
        assert sent.index("[page 1]") < sent.index("Quarterly revenue rose by 12 percent.")
        assert sent.index("[page 2]") < sent.index("Costs fell in March.")
        assert "please read" in sent

        sent = await _send(g, model, "minutes.docx",
                           docx_bytes(["Meeting minutes", "Decided: ship on Friday."],
                                      table=[["owner", "task"], ["Ada", "release notes"]]))
        assert "(Word document)" in sent and "Decided: ship on Friday." in sent
        assert "Ada | release notes" in sent

        for name, body in (("data.csv", "city,people\nOslo,709000\n"),
                           ("conf.json", '{"retries": 3}'),
                           ("main.py", "def answer():\n    return 42\n"),
                           ("README.md", "# Title\n\nSome *markdown*.")):
            sent = await _send(g, model, name, body.encode())
            assert f"[text of {name} (text file):]\n{body}" in sent, sent


async def test_a_long_document_is_cut_and_saved_whole_to_the_senders_workspace(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    body = "START " + "lorem ipsum " * 5000 + " FINISH"
    async with group_gateway(tmp_path, model, gateway__media__document_max_chars=3000) as g:
        sent = await _send(g, model, "long.txt", body.encode(), chat=g.group, who=BOB)
    assert "START" in sent and "FINISH" in sent and "characters cut here" in sent
    assert len(sent) < 4000
    assert "the whole text is in your workspace at documents/long.txt.txt" in sent
    saved = list((tmp_path / "workspace" / "users").glob("*/documents/long.txt.txt"))
    assert len(saved) == 1 and saved[0].read_text() == body
    assert saved[0].parts[-3] == folder_name("telegram", str(BOB["id"]))  # Bob's, not Ada's


async def test_protected_and_damaged_documents_give_a_clear_reason(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model) as g:
        sent = await _send(g, model, "secret.pdf", pdf(["hidden"], password="s3cret"))
        assert "secret.pdf could not be read: the PDF is password-protected" in sent
        assert "hidden" not in sent
        await until(lambda: any("secret.pdf" in m.text and "password-protected" in m.text
                                for m in g.api.bot_messages(g.ada_dm)), "the password note")

        sent = await _send(g, model, "broken.pdf", b"%PDF-1.7\n" + b"\x00garbage" * 50)
        assert "broken.pdf could not be read: the PDF is damaged" in sent
        await until(lambda: any("broken.pdf" in m.text and "damaged" in m.text
                                for m in g.api.bot_messages(g.ada_dm)), "the damage note")
        assert "please read" in sent  # the message itself still went through
