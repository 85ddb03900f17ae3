"""Files sent on Slack and Discord, end to end through the gateway (issue 18): the real
adapter downloads from its fake platform, the gateway reads the file, and the fake model
receives image parts with the MIME type of the bytes and documents as extracted text; a
corrupt file, an oversized one, one over the message's total, a failed or stalled download
and images past the per-message cap each reach the user as a one-line note and the model as
a line in the message, which is never lost."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import FakeOpenAIServer, text
from tests.media.files import docx_bytes, jpeg, pdf, png
from tests.media.platform_gateways import PLATFORMS, ChatGateway, File, chat_gateway
from tests.multiuser.support import until

pytestmark = pytest.mark.timeout(120)


def _main_requests(model: FakeOpenAIServer) -> list[Any]:
    return [r for r in model.requests if "tools" in r.body]


async def _turn(g: ChatGateway, model: FakeOpenAIServer, words: str, files: list[File],
                reply: str) -> Any:
    """The user sends `words` with `files`; returns the model request of that turn once the
    reply is in the chat."""
    model.enqueue(text(reply))
    await g.send(words, files)
    await until(lambda: reply in g.bot_texts(), f"the reply {reply!r}", 20)
    return next(r for r in reversed(_main_requests(model))
                if words in str(r.body["messages"][-1]["content"]))


def _content(req: Any) -> Any:
    return req.body["messages"][-1]["content"]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p["type"] == "text")


def _heads(content: Any) -> list[str]:
    assert isinstance(content, list), content
    return [p["image_url"]["url"].split(",", 1)[0] for p in content
            if p["type"] == "image_url"]


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_images_and_documents_reach_the_model(platform: str, tmp_path: Path,
                                                    model: FakeOpenAIServer) -> None:
    async with chat_gateway(platform, tmp_path, model, providers__main__vision=True,
                            gateway__media__describe_for_history=False) as g:
        # A PNG named .jpg and reported as JPEG: the part's type comes from the bytes.
        req = await _turn(g, model, "two pictures", [("shot.jpg", png(), "image/jpeg"),
                                                      ("photo.jpeg", jpeg(), "image/jpeg")],
                          "A square and a photo.")
        content = _content(req)
        assert _heads(content) == ["data:image/png;base64", "data:image/jpeg;base64"]
        [first, _] = [p for p in content if p["type"] == "image_url"]
        assert base64.b64decode(first["image_url"]["url"].split(",", 1)[1]) == png()

        req = await _turn(g, model, "the report", [
            ("report.pdf", pdf(["Sales rose in March.", "Costs fell in April."]),
             "application/pdf")], "Sales up.")
        sent = _text_of(_content(req))
        assert "[text of report.pdf (PDF, 2 pages)" in sent
        assert "Sales rose in March." in sent and "Costs fell in April." in sent

        req = await _turn(g, model, "the plan", [
            ("plan.docx", docx_bytes(["Step one: write tests."], table=[["owner", "ada"]]),
             "application/vnd.openxmlformats-officedocument.wordprocessingml.document")],
            "Plan read.")
        sent = _text_of(_content(req))
        assert "[text of plan.docx (Word document)" in sent
        assert "Step one: write tests." in sent and "owner | ada" in sent

        # A damaged PDF: the user is told in one line, the model gets the text and a reason.
        req = await _turn(g, model, "and this one", [
            ("broken.pdf", b"%PDF-1.7\n" + b"\x00garbage" * 20, "application/pdf")],
            "That file was damaged.")
        sent = _text_of(_content(req))
        assert "and this one" in sent and "[broken.pdf could not be read:" in sent
        await until(lambda: any(t.startswith("⚠️ broken.pdf: could not be read")
                                for t in g.bot_texts()), "the failure note")
        [note] = [t for t in g.bot_texts() if "broken.pdf" in t]
        assert "\n" not in note


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_files_that_are_not_downloaded_are_said_and_the_message_still_goes(
        platform: str, tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with chat_gateway(platform, tmp_path, model, gateway__media__max_inbound_mb=0.05,
                            gateway__media__max_message_mb=0.08) as g:
        # Over the per-file cap (50 KB), and a file gone from the platform (404).
        if platform == "slack":
            gone = g.fake.add_file("gone.txt", b"vanished", "text/plain")
            del g.fake.files[gone["id"]]
            model.enqueue(text("Only the text arrived."))
            await g.fake.user_message("two files", channel="D0001", files=[
                g.fake.add_file("big.bin", b"x" * 60_000, "application/octet-stream"), gone])
        else:
            g.fake.missing_files.add("gone.txt")
            model.enqueue(text("Only the text arrived."))
            await g.send("two files", [("big.bin", b"x" * 60_000, "application/octet-stream"),
                                       ("gone.txt", b"vanished", "text/plain")])
        await until(lambda: "Only the text arrived." in g.bot_texts(), "the reply", 20)
        sent = _text_of(_content(_main_requests(model)[-1]))
        assert "two files" in sent
        assert ("[attachment big.bin not downloaded: it is 59 KB, over the 51 KB limit per "
                "file]") in sent
        assert "[attachment gone.txt not downloaded: the download failed" in sent \
               or "[attachment gone.txt not downloaded: Slack answered HTTP 404" in sent
        notes = [t for t in g.bot_texts() if t.startswith("⚠️")]
        assert "⚠️ big.bin was not downloaded: it is 59 KB, over the 51 KB limit per file." \
            in notes
        assert any(n.startswith("⚠️ gone.txt was not downloaded:") for n in notes)

        # Two files of 40 KB each: the second is over the message's 80 KB total.
        model.enqueue(text("One of two."))
        await g.send("a pair", [("one.txt", b"1" * 40_000, "text/plain"),
                                ("two.txt", b"2" * 45_000, "text/plain")])
        await until(lambda: "One of two." in g.bot_texts(), "the reply", 20)
        sent = _text_of(_content(_main_requests(model)[-1]))
        assert "[text of one.txt (text file" in sent
        assert ("[attachment two.txt not downloaded: the message's files are over the 82 KB "
                "limit per message]") in sent
        await until(lambda: any(t.startswith("⚠️ two.txt was not downloaded") for t in
                                g.bot_texts()), "the note about the second file")


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_a_stalled_download_is_cut_off_with_a_note(platform: str, tmp_path: Path,
                                                         model: FakeOpenAIServer) -> None:
    async with chat_gateway(platform, tmp_path, model,
                            gateway__media__download_timeout_s=0.5) as g:
        if platform == "slack":
            entry = g.fake.add_file("slow.txt", b"eventually", "text/plain")
            g.fake.download_delay_s[entry["id"]] = 5.0
            model.enqueue(text("Got your words."))
            await g.fake.user_message("here it comes", channel="D0001", files=[entry])
        else:
            g.fake.download_delay_s["slow.txt"] = 5.0
            model.enqueue(text("Got your words."))
            await g.send("here it comes", [("slow.txt", b"eventually", "text/plain")])
        await until(lambda: "Got your words." in g.bot_texts(), "the reply", 20)
        sent = _text_of(_content(_main_requests(model)[-1]))
        assert "here it comes" in sent
        assert "[attachment slow.txt not downloaded: the download took longer than 0.5 s]" in sent
        assert "⚠️ slow.txt was not downloaded: the download took longer than 0.5 s." in \
            g.bot_texts()


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_images_past_the_shared_cap_are_skipped_with_a_note(
        platform: str, tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with chat_gateway(platform, tmp_path, model, providers__main__vision=True,
                            gateway__media__describe_for_history=False,
                            gateway__media__max_images_per_message=2) as g:
        req = await _turn(g, model, "three shots", [(f"s{i}.png", png(), "image/png")
                                                     for i in range(3)], "Two seen.")
        content = _content(req)
        assert _heads(content) == ["data:image/png;base64"] * 2
        assert "[image 3 (s2.png) not shown: at most 2 images per message]" in _text_of(content)
        await until(lambda: "⚠️ s2.png: not shown to the model (at most 2 images per message)."
                    in g.bot_texts(), "the note")
