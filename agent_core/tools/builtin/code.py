"""`execute_code`: a Python script run in the sandbox, calling a chosen set of tools.

The script runs in the caller's workspace and may `from hermes_tools import read_file, …`:
the tools named in `allowed` that this session is offered (`ToolContext.offered`, its frozen
`ToolSelection`), never `execute_code` itself or an interactive tool. A chat whose `files`
toolset is off cannot reach read_file through a script; the script's call of any other tool
is refused with an error it can read. Each call goes through the registry like a call of the
model's, with this turn's context. Only what the script prints comes back. The step refund for a batch of only `execute_code` calls lives in
`agent_core.budget`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from agent_core.sandbox import CodeSandbox, SandboxResult, run_script
from agent_core.tools.base import ToolCall, ToolContext
from agent_core.tools.registry import Tool, ToolError, ToolRegistry

__all__ = ["CodeArgs", "execute_code_tool"]

MAX_CODE_CHARS = 200_000
_NEVER = frozenset({"execute_code", "clarify"})


class CodeArgs(BaseModel):
    code: str = Field(min_length=1, max_length=MAX_CODE_CHARS,
                      description="The Python 3 script to run. Print what you want to see.")


def _report(result: SandboxResult) -> str:
    head = (f"[execute_code: {result.status}, exit code {result.exit_code}, "
            f"{result.duration_s:.2f}s, {result.tool_calls} tool call(s)")
    if result.truncated:
        head += f", output {result.output_bytes:,} bytes (middle omitted)"
    head += "]"
    notes = "".join(f"\n[{n}]" for n in result.notes)
    body = result.output if result.output.strip() else "(no output)"
    return f"{head}{notes}\n{body}"


def execute_code_tool(registry: ToolRegistry, sandbox: CodeSandbox,
                      allowed: Sequence[str]) -> Tool:
    """The tool, calling `allowed` tools of `registry` (those registered when it runs)."""
    names = [n for n in dict.fromkeys(allowed) if n not in _NEVER]

    def callable_tools(ctx: ToolContext) -> dict[str, Tool]:
        """`allowed` ∩ the tools this session is offered (all registered ones without a
        selection), minus interactive tools."""
        pool: Mapping[str, Tool] = (ctx.offered if ctx.offered is not None
                                    else {t.name: t for t in registry.tools()})
        found = {name: pool.get(name) for name in names}
        return {name: tool for name, tool in found.items()
                if tool is not None and not tool.interactive}

    async def execute_code(args: CodeArgs, ctx: ToolContext) -> str:
        iso = await sandbox.probe()
        if (why := sandbox.refusal(iso)) is not None:
            raise ToolError(why)
        tools = callable_tools(ctx)
        seq = [0]

        async def dispatch(tool: str, call_args: dict[str, Any]) -> tuple[bool, str]:
            seq[0] += 1
            call = ToolCall(f"code-{seq[0]}", tool, json.dumps(call_args, ensure_ascii=False))
            outcomes = await registry.execute([call], ctx, tools=tools)
            if not outcomes:
                return False, "the call was not run (the turn was interrupted)"
            return outcomes[0].ok, outcomes[0].content

        schemas = [registry.schema_of(tool) for tool in tools.values()]
        result = await run_script(args.code, workspace=ctx.workspace, isolation=iso,
                                  limits=sandbox.limits, schemas=schemas, dispatch=dispatch)
        text = _report(result)
        if result.status != "success":
            raise ToolError(text)
        return text

    limits = sandbox.limits
    listed = ", ".join(names) or "none"
    return Tool(
        "execute_code",
        "Run a Python 3 script (standard library only) in a sandbox whose working directory "
        "is your workspace, and get back what it prints. Use it to chain many tool calls or "
        "process data in one step. The script may `from hermes_tools import …` those of "
        f"these functions that are on in this chat: {listed} (each returns the tool's text "
        f"result or raises ToolCallError). Limits: {limits.timeout_s:g}s, {limits.memory_mb} MB, "
        f"{limits.max_tool_calls} tool calls, {limits.max_output_bytes:,} bytes of output "
        "shown; no network except those tools.",
        CodeArgs,
        execute_code,
        toolset="code",
        interruptible=True,
        timeout_s=limits.timeout_s + 30,
    )
