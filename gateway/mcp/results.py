"""MCP tool descriptions and results, turned into what the agent's tools offer and return.

Names: `mcp__<server>__<tool>`, where anything but letters, digits, `_` and `-` becomes `_`
and the whole name is cut to 64 characters (the providers' limit). Results: text blocks are
joined; images, audio and binary resources are described, never inlined; structured content
is shown as JSON when the server sent no text. What the model finally sees is cut by the
registry (`max_output_chars`); this module caps what is even kept in memory
(`MAX_RESULT_CHARS`).
"""

from __future__ import annotations

import json
import re
from typing import Any

import mcp_types as mt

__all__ = ["MAX_DESCRIPTION_CHARS", "MAX_RESULT_CHARS", "clean_schema", "result_text",
           "tool_name"]

#: Text of one result kept in memory; more is dropped with a note before any other cut.
MAX_RESULT_CHARS = 1_000_000
#: Longest tool description offered to the model.
MAX_DESCRIPTION_CHARS = 1000
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64


def tool_name(server: str, tool: str) -> str:
    """The name the model calls a server's tool by."""
    return f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"[:_MAX_NAME]


def clean_schema(schema: Any) -> dict[str, Any]:
    """A tool's input schema as a provider accepts it: an object schema without `$schema`."""
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    out = {k: v for k, v in schema.items() if k != "$schema"}
    out.setdefault("type", "object")
    if out.get("type") == "object":
        out.setdefault("properties", {})
    return out


def _block_text(block: Any) -> str:
    if isinstance(block, mt.TextContent):
        return block.text
    if isinstance(block, mt.ImageContent | mt.AudioContent):
        kind = "image" if isinstance(block, mt.ImageContent) else "audio"
        return f"[{kind} ({block.mime_type}, {len(block.data) * 3 // 4:,} bytes) not shown]"
    if isinstance(block, mt.EmbeddedResource):
        res = block.resource
        if isinstance(res, mt.TextResourceContents):
            return res.text
        return f"[binary resource {res.uri} ({res.mime_type or 'unknown type'}) not shown]"
    if isinstance(block, mt.ResourceLink):
        return f"[resource link: {block.uri}]"
    return f"[{getattr(block, 'type', 'unknown')} content not shown]"


def result_text(result: mt.CallToolResult) -> str:
    """The text of a tool result, at most `MAX_RESULT_CHARS` (plus a note when cut)."""
    parts: list[str] = []
    size = 0
    for block in result.content:
        text = _block_text(block)
        parts.append(text)
        size += len(text)
        if size > MAX_RESULT_CHARS:
            break
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    text = "\n".join(parts)
    if len(text) > MAX_RESULT_CHARS:
        text = (text[:MAX_RESULT_CHARS]
                + f"\n[... the server sent more than {MAX_RESULT_CHARS:,} characters; "
                "the rest was dropped ...]")
    return text
