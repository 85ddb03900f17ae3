"""Files sent on Telegram, Slack and Discord are understood after each platform's real
download path (issue 18): the real adapter (unmodified SDK) downloads the file from its fake
platform, and the gateway's `MediaReader` turns the event into what the model receives: a
PNG and a JPEG as image parts with the MIME type of their bytes, a two-page PDF and a DOCX as
extracted text, a WAV as a transcript from the fake model's `/audio/transcriptions`."""

from __future__ import annotations

import base64
import importlib
import pkgutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from gateway.media import MediaReader, MediaSettings
from gateway.media.voice import OpenAITranscriber, SttSettings
from tests.fakes.openai_server import FakeOpenAIServer
from tests.media.files import docx_bytes, jpeg, pdf, png, wav

_DIR = Path(__file__).resolve().parent.parent / "adapters_contract"
HARNESSES = sorted(m.name for m in pkgutil.iter_modules([str(_DIR)])
                   if m.name.startswith("harness_"))


@pytest_asyncio.fixture(params=HARNESSES)
async def h(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    module = importlib.import_module(f"tests.adapters_contract.{request.param}")
    harness = await module.make_harness(tmp_path)
    async with harness:
        await harness.start()
        reason = (getattr(harness, "unsupported", None) or {}).get("attachment")
        if reason:
            pytest.skip(f"{harness.platform}: {reason}")
        yield harness


async def _received(h: Any, tmp_path: Path, name: str, data: bytes,
                    reader: MediaReader) -> tuple[str, list[dict[str, Any]], list[str]]:
    src = tmp_path / "upload" / name
    src.parent.mkdir(exist_ok=True)
    src.write_bytes(data)
    before = len(h.emitted)
    await h.user_says("have a look", attachment=src)
    events = await h.wait_emitted(before + 1)
    got = await reader.read([events[-1]])
    return str(got.message["content"]), got.parts, got.notices


async def test_each_platforms_files_are_understood(h: Any, tmp_path: Path) -> None:
    vision = MediaReader(MediaSettings(vision=True))
    for name, data, mime in (("shot.png", png(), "image/png"),
                             ("photo.jpeg", jpeg(), "image/jpeg")):
        _, parts, _ = await _received(h, tmp_path, name, data, vision)
        [part] = parts
        head, b64 = part["image_url"]["url"].split(",", 1)
        assert head == f"data:{mime};base64" and base64.b64decode(b64) == data, h.platform

    text, parts, notices = await _received(
        h, tmp_path, "report.pdf", pdf(["First page says hello.", "Second page says bye."]),
        vision)
    assert parts == [] and notices == []
    assert "(PDF, 2 pages)" in text and "First page says hello." in text
    assert "Second page says bye." in text

    text, _, _ = await _received(h, tmp_path, "plan.docx", docx_bytes(["Step one: test."]),
                                 vision)
    assert "(Word document)" in text and "Step one: test." in text

    async with FakeOpenAIServer() as model:
        model.stt_queue.append("hello from a voice memo")
        stt = OpenAITranscriber(SttSettings(base_url=model.base_url, api_key="sk-stt"))
        try:
            recording = wav()
            text, _, notices = await _received(h, tmp_path, "memo.wav", recording,
                                               MediaReader(transcriber=stt))
        finally:
            await stt.aclose()
    assert notices == [] and "hello from a voice memo" in text and "[end of transcript]" in text
    assert model.transcriptions[0].data == recording
