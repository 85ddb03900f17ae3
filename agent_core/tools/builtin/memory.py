"""The `memory` tool: add / replace / remove entries of MEMORY.md and USER.md.

Every write records `ToolContext.principal` (who caused the turn) and `origin` in the
folder's `.audit.jsonl` (`agent_core.memory`)."""

from __future__ import annotations

import asyncio
import json
from typing import Literal

from pydantic import BaseModel, Field

from agent_core.memory import MemoryResult, MemoryStore
from agent_core.tools.base import ToolContext
from agent_core.tools.registry import Tool, ToolError

__all__ = ["MEMORY_STORE_KEY", "MemoryArgs", "memory_tool"]

MEMORY_STORE_KEY = "memory_store"


class MemoryArgs(BaseModel):
    action: Literal["add", "replace", "remove"]
    target: Literal["memory", "user"] = Field(
        "memory",
        description="'memory' = your own notes (MEMORY.md); 'user' = facts about the user "
        "(USER.md).",
    )
    content: str | None = Field(None, description="New entry text (add, replace).")
    old_text: str | None = Field(
        None, description="A unique substring of the entry to change (replace, remove)."
    )


def _store(ctx: ToolContext) -> MemoryStore:
    store = ctx.extra.get(MEMORY_STORE_KEY)
    if isinstance(store, MemoryStore):
        return store
    if ctx.memory_dir is None:
        raise ToolError("Memory is not available in this session.")
    return MemoryStore(ctx.memory_dir, user_dir=ctx.user_dir)


def _apply(store: MemoryStore, args: MemoryArgs, ctx: ToolContext) -> MemoryResult:
    who = {"principal": ctx.principal, "origin": ctx.origin}
    if args.action == "add":
        return store.add(args.target, args.content or "", **who)
    if args.action == "replace":
        return store.replace(args.target, args.old_text or "", args.content or "", **who)
    return store.remove(args.target, args.old_text or "", **who)


async def memory(args: MemoryArgs, ctx: ToolContext) -> str:
    store = _store(ctx)
    result = await asyncio.to_thread(_apply, store, args, ctx)
    if not result.ok:
        detail: dict[str, object] = {"error": result.message, "usage": result.usage}
        if result.entries:
            detail["current_entries"] = list(result.entries)
        raise ToolError(json.dumps(detail, ensure_ascii=False))
    return json.dumps(
        {
            "success": True,
            "target": result.target,
            "message": result.message,
            "usage": result.usage,
            "entry_count": result.entry_count,
            "note": "Saved to disk; it appears in the system prompt from the next session.",
        },
        ensure_ascii=False,
    )


def memory_tool() -> Tool:
    return Tool(
        "memory",
        "Save durable facts across sessions. target='memory' for your notes about the "
        "environment and lessons learned, target='user' for the user's preferences and "
        "profile. Entries are short; MEMORY.md holds 2,200 characters and USER.md 1,375. "
        "Use replace/remove (with old_text) to consolidate when full.",
        MemoryArgs,
        memory,
        toolset="memory",
        interruptible=False,
    )
