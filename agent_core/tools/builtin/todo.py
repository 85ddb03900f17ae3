"""The `todo` tool: a per-session task list kept in `ctx.extra["todos"]`.

The caller keeps the same `extra` dict for the whole session so the list survives turns.
"""

from __future__ import annotations

import json
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

from agent_core.tools.base import ToolContext
from agent_core.tools.registry import Tool

__all__ = ["TODO_KEY", "TodoArgs", "TodoItem", "todo_tool"]

TODO_KEY = "todos"
MAX_TODOS = 50

Status = Literal["pending", "in_progress", "completed", "cancelled"]


class TodoItem(BaseModel):
    id: str = Field(min_length=1, max_length=64)
    content: str = Field(min_length=1, max_length=500)
    status: Status = "pending"


class TodoArgs(BaseModel):
    todos: list[TodoItem] | None = Field(
        None, max_length=MAX_TODOS, description="Items to write; omit to read the list."
    )
    merge: bool = Field(
        False,
        description="True: update items by id and append new ones. False: replace the list.",
    )


def _current(ctx: ToolContext) -> list[dict[str, Any]]:
    items = ctx.extra.get(TODO_KEY)
    if not isinstance(items, list):
        items = []
        ctx.extra[TODO_KEY] = items
    return items


async def todo(args: TodoArgs, ctx: ToolContext) -> str:
    items = _current(ctx)
    if args.todos is not None:
        incoming = [t.model_dump() for t in args.todos]
        if args.merge:
            by_id = {item["id"]: item for item in items}
            for new in incoming:
                if new["id"] in by_id:
                    by_id[new["id"]].update(new)
                else:
                    items.append(new)
                    by_id[new["id"]] = new
        else:
            items[:] = list({t["id"]: t for t in incoming}.values())
        del items[MAX_TODOS:]
    counts = {s: sum(1 for i in items if i["status"] == s) for s in get_args(Status)}
    return json.dumps({"todos": items, "summary": counts}, ensure_ascii=False)


def todo_tool() -> Tool:
    return Tool(
        "todo",
        "Keep a task list for multi-step work in this session. Call with todos to write "
        "(merge=true updates by id), without to read. Statuses: pending, in_progress, "
        "completed, cancelled.",
        TodoArgs,
        todo,
        toolset="todo",
    )
