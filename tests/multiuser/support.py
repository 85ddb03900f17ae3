"""Helpers of the multi-user tests: what the model was sent, and waiting for a condition."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from tests.fakes.openai_server import RecordedRequest

__all__ = ["system_prompt", "tool_results", "until"]


def tool_results(request: RecordedRequest) -> list[str]:
    """The content of every tool message the model was sent in `request`."""
    return [str(m.get("content")) for m in request.body["messages"] if m.get("role") == "tool"]


def tool_payload(request: RecordedRequest) -> dict[str, Any]:
    """The last tool result of `request`, parsed (error results are wrapped as text)."""
    raw = tool_results(request)[-1]
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {"text": raw}
    return parsed if isinstance(parsed, dict) else {"value": parsed}


def system_prompt(request: RecordedRequest) -> str:
    first = request.body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


async def until(pred: Callable[[], bool], what: str, timeout_s: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not pred():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)
