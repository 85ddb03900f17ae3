"""The api adapter reads every OpenAI chat content part a user sends (issue 18): `input_audio`
becomes a transcript through `stt.provider` and `file` parts (PDF, DOCX) their extracted
text, through the real gateway with the openai SDK as the client and the fake model. What it
cannot read it refuses with a clear 400 (never drops it silently); the image-count and
per-message size caps are the gateway's (`gateway.media`), shared with the chat platforms."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI, BadRequestError

from adapters.api.adapter import ApiAdapter
from tests.fakes.openai_server import FakeOpenAIServer, text
from tests.gateway.runtime_harness import runner_for
from tests.media.files import docx_bytes, pdf, png, wav

KEY = "sk-media-user-0123456789"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@asynccontextmanager
async def _client(tmp_path: Path, model: FakeOpenAIServer,
                  **overrides: Any) -> AsyncIterator[AsyncOpenAI]:
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY]})
    async with runner_for(tmp_path, model, adapters={"api": adapter},
                          compression__enabled=False, **overrides):
        client = AsyncOpenAI(base_url=f"http://127.0.0.1:{adapter.port}/v1", api_key=KEY,
                             max_retries=0, timeout=60)
        try:
            yield client
        finally:
            await client.close()


async def test_input_audio_and_file_parts_reach_the_model(tmp_path: Path,
                                                          model: FakeOpenAIServer) -> None:
    recording = wav()
    report = pdf(["Revenue rose nine percent.", "Costs fell two percent."])
    plan = docx_bytes(["Step one: ship the gateway."])
    model.stt_queue.append("Summarise the two files, please.")
    model.enqueue(text("Revenue up, costs down, ship it."))
    async with _client(tmp_path, model) as client:
        resp = await client.chat.completions.create(model="hermes-agent", messages=[
            {"role": "user", "content": [
                {"type": "text", "text": "see attached"},
                {"type": "input_audio", "input_audio": {"data": _b64(recording),
                                                        "format": "wav"}},
                {"type": "file", "file": {"filename": "report.pdf",
                                          "file_data": "data:application/pdf;base64,"
                                                       + _b64(report)}},
                {"type": "file", "file": {"filename": "plan.docx", "file_data": _b64(plan)}},
            ]}])
    assert resp.choices[0].message.content == "Revenue up, costs down, ship it."
    [call] = model.transcriptions
    assert call.data == recording and call.filename.endswith(".wav")
    [req] = [r for r in model.requests if "tools" in r.body]
    sent = req.body["messages"][-1]["content"]
    assert isinstance(sent, str) and "see attached" in sent
    assert "transcribed by speech-to-text:]\nSummarise the two files, please." in sent
    assert "[text of report.pdf (PDF, 2 pages)" in sent
    assert "Revenue rose nine percent." in sent and "Costs fell two percent." in sent
    assert "[text of plan.docx (Word document)" in sent and "Step one: ship the gateway." in sent


async def test_parts_it_cannot_read_are_refused_with_a_reason(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    cases = [
        ({"type": "file", "file": {"file_id": "file-abc123"}}, "file_id is not supported"),
        ({"type": "input_audio", "input_audio": {"format": "wav"}}, "input_audio.data"),
        ({"type": "input_audio", "input_audio": {"data": "not base64!", "format": "wav"}},
         "not valid base64"),
        ({"type": "video_url", "video_url": {"url": "data:video/mp4;base64,AAAA"}},
         "'video_url' is not supported"),
    ]
    async with _client(tmp_path, model) as client:
        for part, reason in cases:
            with pytest.raises(BadRequestError, match=reason):
                await client.chat.completions.create(model="hermes-agent", messages=[
                    {"role": "user", "content": [{"type": "text", "text": "hi"}, part]}])
    assert model.requests == [] and model.transcriptions == []


async def test_the_image_count_and_message_size_caps_are_the_gateways(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    image: dict[str, Any] = {"type": "image_url",
                             "image_url": {"url": "data:image/png;base64," + _b64(png())}}
    blob = _b64(b"x" * 6000)
    async with _client(tmp_path, model, gateway__media__max_images_per_message=2,
                       gateway__media__max_message_mb=0.01) as client:  # about 10 KB
        with pytest.raises(BadRequestError, match="at most 2 images per message"):
            await client.chat.completions.create(model="hermes-agent", messages=[
                {"role": "user", "content": [image, image, image]}])
        with pytest.raises(BadRequestError, match="larger than 10485 bytes together"):
            await client.chat.completions.create(model="hermes-agent", messages=[
                {"role": "user", "content": [
                    {"type": "file", "file": {"filename": "a.txt", "file_data": blob}},
                    {"type": "file", "file": {"filename": "b.txt", "file_data": blob}}]}])
        model.enqueue(text("Two images seen."))
        resp = await client.chat.completions.create(model="hermes-agent", messages=[
            {"role": "user", "content": [{"type": "text", "text": "two"}, image, image]}])
    assert resp.choices[0].message.content == "Two images seen."
