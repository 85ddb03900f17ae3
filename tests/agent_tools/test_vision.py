"""`vision_analyze`: the image reaches the vision model as an `image_url` part with the MIME
type of its bytes, resized within limits; only the caller's workspace, this chat's attachments
and (SSRF-checked) URLs are readable."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

from PIL import Image
from pydantic import SecretStr

from agent_core.provider import ProviderSettings
from agent_core.tools.base import ToolCall, ToolContext, ToolOutcome
from agent_core.tools.builtin.vision import VisionSettings, vision_tool
from agent_core.tools.builtin.web_extract import WebFetchSettings
from agent_core.tools.registry import ToolRegistry
from agent_core.web.netguard import AddressPolicy
from gateway.compression.summarizer import AuxSummarizer
from tests.fakes.openai_server import FakeOpenAIServer, text
from tests.fakes.web_server import FakeWebServer, Page


def image_bytes(fmt: str, size: tuple[int, int], mode: str = "RGB") -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size, (200, 30, 30) if mode == "RGB" else (200, 30, 30, 128)).save(
        buf, format=fmt)
    return buf.getvalue()


async def analyze(model: FakeOpenAIServer, ctx: ToolContext, image: str,
                  allow: tuple[str, ...] = ()) -> ToolOutcome:
    aux = AuxSummarizer(ProviderSettings(name="vis", base_url=model.base_url, model="vis-m",
                                         api_keys=[SecretStr("sk-v")], streaming=False))
    st = VisionSettings(model=aux, fetch=WebFetchSettings(policy=AddressPolicy.of(allow)))
    try:
        (out,) = await ToolRegistry([vision_tool(st)]).execute(
            [ToolCall("v1", "vision_analyze",
                      json.dumps({"image": image, "question": "What colour is it?"}))], ctx)
    finally:
        await aux.aclose()
    return out


def sent_image(model: FakeOpenAIServer) -> tuple[str, Image.Image, dict[str, Any]]:
    req = model.requests[-1]
    assert req.body["model"] == "vis-m"
    parts = req.messages[-1]["content"]
    assert parts[0] == {"type": "text", "text": "What colour is it?"}
    assert parts[1]["type"] == "image_url"
    url = parts[1]["image_url"]["url"]
    head, b64 = url.split(",", 1)
    mime = head.removeprefix("data:").removesuffix(";base64")
    return mime, Image.open(io.BytesIO(base64.b64decode(b64))), req.body


def context(tmp: Path) -> ToolContext:
    ws, cache = tmp / "workspace" / "users" / "alice", tmp / "cache" / "chats" / "chat-a"
    ws.mkdir(parents=True)
    cache.mkdir(parents=True)
    return ToolContext(workspace=ws, attachments_dir=cache)


async def test_workspace_png_is_sent_as_png_part(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    (ctx.workspace / "chart.png").write_bytes(image_bytes("PNG", (40, 30)))
    async with FakeOpenAIServer() as model:
        model.enqueue(text("It is red."))
        out = await analyze(model, ctx, "chart.png")
        assert out.ok, out.content
        assert json.loads(out.content) == {"image": "chart.png", "size": "40x30",
                                           "analysis": "It is red."}
        mime, img, _ = sent_image(model)
    assert mime == "image/png" and img.format == "PNG" and img.size == (40, 30)


async def test_large_attachment_is_resized_and_mime_comes_from_the_bytes(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    assert ctx.attachments_dir is not None
    # A JPEG named .png, 3000x2000: decoded at half size by DCT scaling (the long edge stays
    # over DRAFT_MIN_EDGE and under MAX_EDGE) and re-encoded as JPEG.
    (ctx.attachments_dir / "photo.png").write_bytes(image_bytes("JPEG", (3000, 2000)))
    (ctx.attachments_dir / "logo.gif").write_bytes(image_bytes("PNG", (2400, 600), mode="RGBA"))
    async with FakeOpenAIServer() as model:
        model.enqueue(text("A red photo."), text("A red logo."))
        out = await analyze(model, ctx, "photo.png")
        assert out.ok, out.content
        mime, img, _ = sent_image(model)
        assert mime == "image/jpeg" and img.format == "JPEG" and img.size == (1500, 1000)
        out = await analyze(model, ctx, str(ctx.attachments_dir / "logo.gif"))
        assert out.ok, out.content
        mime, img, _ = sent_image(model)
        assert mime == "image/png" and img.size == (1568, 392) and img.mode == "RGBA"


async def test_image_by_url_follows_the_fetch_rules(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    async with FakeOpenAIServer() as model, FakeWebServer() as site:
        site.pages["/pic"] = Page(image_bytes("WEBP", (64, 64)),
                                  content_type="application/octet-stream")
        out = await analyze(model, ctx, f"{site.base_url}/pic")
        assert not out.ok and "loopback" in out.content
        assert site.requests == [] and model.requests == []
        model.enqueue(text("Red square."))
        out = await analyze(model, ctx, f"{site.base_url}/pic", allow=("127.0.0.1",))
        assert out.ok, out.content
        mime, img, _ = sent_image(model)
        assert mime == "image/webp" and img.size == (64, 64)


async def test_other_users_files_and_non_images_are_refused(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    other_ws = tmp_path / "workspace" / "users" / "bob"
    other_cache = tmp_path / "cache" / "chats" / "chat-b"
    for d in (other_ws, other_cache):
        d.mkdir(parents=True)
        (d / "private.png").write_bytes(image_bytes("PNG", (10, 10)))
    (ctx.workspace / "notes.txt").write_text("not an image")
    (ctx.workspace / "link.png").symlink_to(other_ws / "private.png")
    async with FakeOpenAIServer() as model:
        for ref in ("../bob/private.png", str(other_ws / "private.png"),
                    str(other_cache / "private.png"), "../../../cache/chats/chat-b/private.png",
                    "link.png", "/etc/passwd"):
            out = await analyze(model, ctx, ref)
            assert not out.ok, ref
            assert "neither an http(s) URL nor a file" in out.content, out.content
        out = await analyze(model, ctx, "notes.txt")
        assert not out.ok and "not a supported image" in out.content
        assert model.requests == []


def test_a_decompression_bomb_is_refused_before_decoding() -> None:
    from agent_core.web.images import ImageError, prepare_image

    buf = io.BytesIO()
    Image.new("1", (9000, 8000)).save(buf, format="PNG")  # 72 Mpx, a few KB compressed
    assert len(buf.getvalue()) < 100_000
    try:
        prepare_image(buf.getvalue())
    except ImageError as exc:
        assert "too large to decode (9000x8000 pixels)" in str(exc)
    else:
        raise AssertionError("a 72-megapixel image was decoded")
