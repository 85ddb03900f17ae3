"""`terminal`: one shell command in the caller's workspace, with a timeout and output caps.

A command that matches the dangerous list (`dangerous.needs_approval`) runs only after the
user approves it through the approval port; no port, a refusal or silence means it does not
run, and the model is told not to work around that. The command's environment carries no
secrets of the gateway (names that look like keys, tokens or passwords are dropped).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from dataclasses import dataclass

from pydantic import BaseModel, Field

from agent_core.ports import ApprovalRequest
from agent_core.sandbox.capture import OutputCapture, read_capped
from agent_core.tools.base import ToolContext
from agent_core.tools.builtin.dangerous import needs_approval
from agent_core.tools.registry import Tool, ToolError
from hermes_common.redact import is_secret_name, redact

__all__ = ["TerminalArgs", "TerminalSettings", "terminal_tool"]

MAX_COMMAND_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class TerminalSettings:
    timeout_s: float = 60.0
    approval_timeout_s: float = 300.0
    max_output_bytes: int = 50_000
    kill_output_bytes: int = 8_000_000


class TerminalArgs(BaseModel):
    command: str = Field(min_length=1, max_length=MAX_COMMAND_CHARS,
                         description="The shell command to run (POSIX sh) in the workspace.")
    timeout_s: float | None = Field(None, gt=0, description="Optional shorter time limit.")


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not is_secret_name(k)}


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def _run(command: str, ctx: ToolContext, limit_s: float,
               settings: TerminalSettings) -> str:
    started = time.monotonic()
    out = OutputCapture(settings.max_output_bytes)
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", command, cwd=ctx.workspace, env=_environment(),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, start_new_session=True)
    note = ""
    try:
        assert proc.stdout is not None
        try:
            if not await asyncio.wait_for(
                    read_capped(proc.stdout, out, settings.kill_output_bytes), limit_s):
                note = f"output passed {settings.kill_output_bytes:,} bytes; the command was killed"
        except TimeoutError:
            note = f"the command ran past {limit_s:g}s and was killed"
        if note:
            _kill(proc)
        code = await proc.wait()
    finally:
        if proc.returncode is None:
            _kill(proc)
            with contextlib.suppress(Exception):
                await asyncio.shield(proc.wait())
    head = f"[terminal: exit code {code}, {time.monotonic() - started:.2f}s"
    if out.truncated:
        head += f", output {out.total:,} bytes (middle omitted)"
    head += "]" + (f"\n[{note}]" if note else "")
    text = out.text()
    result = f"{head}\n{redact(text) if text.strip() else '(no output)'}"
    if note or code != 0:
        raise ToolError(result)
    return result


def terminal_tool(settings: TerminalSettings) -> Tool:
    async def terminal(args: TerminalArgs, ctx: ToolContext) -> str:
        command = args.command
        reason = needs_approval(command, ctx.workspace)
        if reason is not None:
            port = ctx.ports.approval
            if port is None:
                raise ToolError(f"This command needs the user's approval ({reason}), and "
                                "approval cannot be asked here; it was not run.")
            decision = await port.request(ApprovalRequest("terminal", command, reason))
            if not decision.approved:
                raise ToolError(
                    f"The command was not approved ({decision.detail or 'denied'}); it was not "
                    "run. Do not retry it, rephrase it or work around it; tell the user.")
        timeout = min(args.timeout_s or settings.timeout_s, settings.timeout_s)
        return await _run(command, ctx, timeout, settings)

    return Tool(
        "terminal",
        "Run a shell command (POSIX sh) in your workspace and get its output (stdout and "
        f"stderr together; {settings.max_output_bytes:,} bytes shown, up to "
        f"{settings.timeout_s:g}s). Dangerous commands (deletes outside the workspace, disk, "
        "permission or system changes, downloads piped into a shell, credential files, …) "
        "wait for the user's approval in the chat.",
        TerminalArgs,
        terminal,
        toolset="terminal",
        interruptible=True,
        timeout_s=settings.timeout_s + settings.approval_timeout_s + 30,
    )
