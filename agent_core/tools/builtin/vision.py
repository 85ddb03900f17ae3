"""The `vision_analyze` tool (toolset `vision`): look at an image and answer a question about it.

The image comes from an http(s) URL (fetched under the same SSRF rules as `web_extract`), the
caller's workspace, or the files users sent in the current chat (`ToolContext.attachments_dir`);
no other path is readable. Its format is detected from the bytes, it is resized and re-encoded
within provider limits (`agent_core.web.images`) and sent as an `image_url` content part to
the vision model the gateway injected: the main model when it declares vision, else
`auxiliary.vision_model`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import structlog
from pydantic import BaseModel, Field

from agent_core.compression.types import Summarizer, SummarizerError
from agent_core.tools.base import ToolContext
from agent_core.tools.builtin.web_extract import WebFetchSettings
from agent_core.tools.registry import Tool, ToolError
from agent_core.web.images import ImageError, data_url, prepare_image
from agent_core.web.netguard import FetchError, fetch

__all__ = ["VisionArgs", "VisionSettings", "vision_tool"]

log = structlog.get_logger("agent_core.tools.vision")

_ACCEPT = "image/avif,image/webp,image/png,image/jpeg,image/gif,image/*;q=0.8"


@dataclass(frozen=True)
class VisionSettings:
    model: Summarizer
    fetch: WebFetchSettings = dataclasses.field(default_factory=WebFetchSettings)
    max_bytes: int = 20_000_000
    max_answer_tokens: int = 1500


class VisionArgs(BaseModel):
    image: str = Field(min_length=1, description=(
        "The image: an http(s) URL, a path in your workspace, or the name of a file the user "
        "sent in this chat."))
    question: str = Field("Describe this image in detail.", max_length=4000,
                          description="What to find out about the image.")


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _read_local(ref: str, ctx: ToolContext, max_bytes: int) -> tuple[str, bytes]:
    """(where, bytes) of a workspace or chat-attachment file. Blocking. Raises ToolError."""
    if "\x00" in ref:
        raise ToolError("Invalid path: it contains a NUL byte.")
    roots = [Path(ctx.workspace).resolve()]
    if ctx.attachments_dir is not None:
        roots.append(Path(ctx.attachments_dir).resolve())
    raw = Path(ref)
    candidates = [raw] if raw.is_absolute() else [root / raw for root in roots]
    for cand in candidates:
        try:
            real = cand.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        root = next((r for r in roots if _inside(real, r)), None)
        if root is None or not real.is_file():
            continue
        size = real.stat().st_size
        if size > max_bytes:
            raise ToolError(f"the image is too large ({size} bytes; limit {max_bytes}).")
        where = "attachment" if root != roots[0] else "workspace"
        return where, real.read_bytes()
    raise ToolError(f"{ref!r} is neither an http(s) URL nor a file in your workspace or among "
                    "the files sent in this chat.")


def vision_tool(settings: VisionSettings) -> Tool:
    async def vision_analyze(args: VisionArgs, ctx: ToolContext) -> str:
        ref = args.image.strip()
        if ref.lower().startswith(("http://", "https://")):
            limits = dataclasses.replace(settings.fetch.limits, max_bytes=settings.max_bytes)
            try:
                got = await fetch(ref, settings.fetch.policy, limits, accept=_ACCEPT,
                                  resolver=settings.fetch.resolver)
            except FetchError as exc:
                raise ToolError(f"could not load the image: {exc}") from None
            source, raw = "url", got.body
        else:
            source, raw = await asyncio.to_thread(_read_local, ref, ctx, settings.max_bytes)
        try:
            image = await asyncio.to_thread(prepare_image, raw)
        except ImageError as exc:
            raise ToolError(str(exc)) from None
        messages = [{"role": "user", "content": [
            {"type": "text", "text": args.question},
            {"type": "image_url", "image_url": {"url": data_url(image)}},
        ]}]
        try:
            answer = await settings.model.summarize(messages,
                                                    max_tokens=settings.max_answer_tokens)
        except SummarizerError as exc:
            raise ToolError(f"the vision model failed: {exc.reason}") from None
        log.info("vision_analyzed", source=source, mime=image.mime, reencoded=image.reencoded)
        return json.dumps({"image": ref, "size": f"{image.width}x{image.height}",
                           "analysis": answer.strip()}, ensure_ascii=False)

    return Tool(
        "vision_analyze",
        "Look at an image and answer a question about it (what it shows, text in it, "
        "details). The image may be an http(s) URL, a file in your workspace, or a file the "
        "user sent in this chat.",
        VisionArgs,
        vision_analyze,
        toolset="vision",
        parallel_safe=True,
        timeout_s=300.0,
    )
