"""What a turn is given and hands on: re-runs after a restart, this turn's images, the
memory provider's sync of a finished turn."""

from __future__ import annotations

from typing import Any

from agent_core.memory import TurnMemory
from gateway.events import MessageEvent

__all__ = ["is_rerun", "rerun_id", "sync_memory", "with_images"]


def sync_memory(memory: TurnMemory, asked: dict[str, Any] | None, reply: str) -> None:
    """Hand a completed turn (the user's words, the final reply) to the memory provider."""
    if asked is None or asked.get("role") != "user":
        return
    content = asked.get("content")
    if isinstance(content, list):
        content = "\n".join(p["text"] for p in content
                            if isinstance(p, dict) and isinstance(p.get("text"), str))
    if isinstance(content, str) and content.strip():
        memory.sync(content, reply)


def is_rerun(event: MessageEvent) -> bool:
    return rerun_id(event) is not None


def rerun_id(event: MessageEvent) -> int | None:
    """The stored message a turn re-run after a restart answers (None for a live event)."""
    if isinstance(event.raw, dict) and isinstance(event.raw.get("recovered_message_id"), int):
        return int(event.raw["recovered_message_id"])
    return None


def with_images(message: dict[str, Any], parts: list[dict[str, Any]] | None
                 ) -> dict[str, Any]:
    """`message` with `parts` added to its text for this request (none: unchanged)."""
    if not parts:
        return message
    text = str(message.get("content") or "")
    return {**message, "content": [{"type": "text", "text": text}, *parts]}
