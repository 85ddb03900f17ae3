"""The `clarify` tool: ask the user a question and wait for the answer (ask-user port)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agent_core.tools.base import ToolContext
from agent_core.tools.registry import Tool, ToolError

__all__ = ["ClarifyArgs", "clarify_tool"]


class ClarifyArgs(BaseModel):
    question: str = Field(min_length=1, description="The question to ask the user.")
    choices: list[str] | None = Field(
        None, max_length=6, description="Optional short answers the user can pick from."
    )


async def clarify(args: ClarifyArgs, ctx: ToolContext) -> str:
    port = ctx.ports.ask_user
    if port is None:
        raise ToolError(
            "The user cannot be asked in this session; make a reasonable assumption and say so."
        )
    answer = await port.ask(args.question, args.choices or None)
    return f"The user answered: {answer}"


def clarify_tool() -> Tool:
    return Tool(
        "clarify",
        "Ask the user a clarifying question when the request is ambiguous and a wrong guess "
        "would be costly. Waits for the answer.",
        ClarifyArgs,
        clarify,
        toolset="clarify",
        interactive=True,
    )
