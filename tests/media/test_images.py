"""Inbound images reach the model (issue 18, deliverable 1): as image parts of the user
message for a vision main model, or described by the auxiliary vision model; in later turns
only the text stand-in remains. Through Telegram (fake Bot API) and the api adapter (OpenAI
SDK client), against the fake model."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI, BadRequestError
from PIL import Image

from adapters.api.adapter import ApiAdapter
from tests.fakes.openai_server import FakeOpenAIServer, error, text
from tests.gateway.runtime_harness import runner_for
from tests.media.files import jpeg, png
from tests.multiuser.support import until
from tests.multiuser.telegram_harness import ADA, group_gateway

KEY = "sk-media-user-0123456789"


def _user(req: Any) -> Any:
    return req.body["messages"][-1]["content"]


def _asked(model: FakeOpenAIServer, words: str) -> Any:
    """The last main-model request whose newest user message says `words` (image
    descriptions for the history are requests of their own)."""
    return next(r for r in reversed(model.requests)
                if words in str(r.body["messages"][-1]["content"]) and "tools" in r.body)


def _image_parts(content: Any) -> list[tuple[str, bytes]]:
    assert isinstance(content, list), content
    out = []
    for part in content:
        if part["type"] == "image_url":
            head, b64 = part["image_url"]["url"].split(",", 1)
            out.append((head, base64.b64decode(b64)))
    return out


async def test_telegram_photo_and_image_document_reach_a_vision_model_as_image_parts(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model, providers__main__vision=True) as g:
        model.enqueue(text("A red photo."))
        await g.turn(g.ada_dm, ADA, "what is this?", "A red photo.", photo=jpeg())
        content = _user(_asked(model, "what is this?"))
        assert content[0]["type"] == "text" and "what is this?" in content[0]["text"]
        [(head, data)] = _image_parts(content)
        assert head == "data:image/jpeg;base64"
        assert Image.open(io.BytesIO(data)).size == (64, 48)

        # After the turn the photo is described for the history (a request of its own).
        await until(lambda: any("tools" not in r.body for r in model.requests),
                    "the photo's description for the history")
        # A PNG sent as a file with a misleading name: the format comes from the bytes.
        model.enqueue(text("A blue square."))
        await g.turn(g.ada_dm, ADA, "and this?", "A blue square.",
                     document=("notes.txt", png()))
        req = _asked(model, "and this?")
        [(head, _)] = _image_parts(_user(req))
        assert head == "data:image/png;base64"
        # The earlier photo is only its text stand-in now (its description).
        earlier = [m for m in req.body["messages"] if m["role"] == "user"][0]
        assert isinstance(earlier["content"], str) and "image 1" in earlier["content"]
        assert "base64" not in earlier["content"]


async def test_without_vision_the_auxiliary_model_describes_the_photo(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model, auxiliary__vision_model="vision-m") as g:
        model.enqueue(text("A red rectangle with the word SALE."), text("It says SALE."))
        await g.turn(g.ada_dm, ADA, "what does it say?", "It says SALE.", photo=jpeg())
        describe, main = model.requests[-2:]
        assert describe.body["model"] == "vision-m" and "tools" not in describe.body
        [(head, _)] = _image_parts(_user(describe))
        assert head == "data:image/jpeg;base64"
        sent = _user(main)
        assert isinstance(sent, str)
        assert "described by the vision model" in sent
        assert "A red rectangle with the word SALE." in sent and "what does it say?" in sent


async def test_a_failed_description_is_said_and_the_text_still_goes(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model, auxiliary__vision_model="vision-m") as g:
        model.enqueue(error(400, "this model cannot read images"), text("Text only, then."))
        await g.turn(g.ada_dm, ADA, "look at this", "Text only, then.", photo=jpeg())
        assert "look at this" in _user(model.requests[-1])
        await until(lambda: any("could not be described" in m.text
                                for m in g.api.bot_messages(g.ada_dm)), "the failure note")


async def test_a_corrupt_image_is_said_and_the_text_still_goes(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model, providers__main__vision=True) as g:
        model.enqueue(text("I got your text."))
        broken = jpeg()[:40]
        await g.turn(g.ada_dm, ADA, "my photo", "I got your text.",
                     document=("photo.jpg", broken))
        sent = _user(model.requests[-1])
        assert isinstance(sent, str) and "could not be read" in sent and "my photo" in sent
        await until(lambda: any("photo.jpg" in m.text and "could not be read" in m.text
                                for m in g.api.bot_messages(g.ada_dm)), "the failure note")


async def test_api_image_url_parts_reach_the_model(tmp_path: Path,
                                                   model: FakeOpenAIServer) -> None:
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY]})
    async with runner_for(tmp_path, model, adapters={"api": adapter}, compression__enabled=False,
                          providers__main__vision=True):
        model.enqueue(text("Two images: red and blue."))
        client = AsyncOpenAI(base_url=f"http://127.0.0.1:{adapter.port}/v1", api_key=KEY,
                             max_retries=0, timeout=30)
        url = "data:image/png;base64," + base64.b64encode(png()).decode()
        wrong = "data:image/png;base64," + base64.b64encode(jpeg()).decode()  # really a JPEG
        try:
            resp = await client.chat.completions.create(model="hermes-agent", messages=[
                {"role": "user", "content": [
                    {"type": "text", "text": "Compare these"},
                    {"type": "image_url", "image_url": {"url": url}},
                    {"type": "image_url", "image_url": {"url": wrong}}]}])
            with pytest.raises(BadRequestError, match="data: URLs"):
                await client.chat.completions.create(model="hermes-agent", messages=[
                    {"role": "user", "content": [
                        {"type": "image_url",
                         "image_url": {"url": "http://127.0.0.1:9/x.png"}}]}])
        finally:
            await client.close()
    assert resp.choices[0].message.content == "Two images: red and blue."
    parts = _image_parts(_user(model.requests[0]))
    assert [h for h, _ in parts] == ["data:image/png;base64", "data:image/jpeg;base64"]
    # The images were cached in the api user's own chat folder.
    assert list((tmp_path / "cache" / "chats").glob("*/image-*.bin"))


def test_a_large_photo_is_scaled_within_the_provider_limits() -> None:
    """A 12-megapixel phone photo is decoded at half size (DCT scaling) and resized to the
    long edge of 1568 px; a photo too small to halve keeps its detail up to 1568 px; the
    strongest scaling that keeps the long edge at 1024 px or more is used (a panorama)."""
    from agent_core.web.images import DRAFT_MIN_EDGE, MAX_EDGE, prepare_image

    for size, expected in (((4032, 3024), (1568, 1176)), ((2000, 1500), (1568, 1176)),
                           ((9000, 1200), (1125, 150))):
        got = prepare_image(jpeg(size))
        assert (got.width, got.height) == expected and got.mime == "image/jpeg", size
        assert max(expected) <= MAX_EDGE
        assert Image.open(io.BytesIO(got.data)).size == expected
    got = prepare_image(jpeg((3000, 2250)))  # halves to 1500x1125: no resize needed
    assert (got.width, got.height) == (1500, 1125) and max(1500, 1125) >= DRAFT_MIN_EDGE
