"""The tools that act, built from `tools.code` and `tools.terminal` and added to the
process's tool registry (`execute_code` in its sandbox, `terminal` with its approvals)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_core.tools.registry import ToolRegistry
from gateway.config.tools import ToolsConfig

if TYPE_CHECKING:  # each is imported only when its tool is on
    from agent_core.sandbox import CodeSandbox

__all__ = ["ActingTools", "add_acting_tools"]


@dataclass(slots=True)
class ActingTools:
    """What was added: the code sandbox (None when `execute_code` is off) and whether
    `terminal` is on."""

    sandbox: CodeSandbox | None = None
    terminal: bool = False

    async def probe(self) -> None:
        """Find (and log, `sandbox_isolation`) the isolation scripts get. Must not raise."""
        if self.sandbox is not None:
            await self.sandbox.probe()

    def describe(self) -> list[str]:
        """Lines for `/tools`: each acting tool, on or off, and how it is confined."""
        lines = []
        if self.sandbox is None:
            lines.append("execute_code: off (tools.code.enabled: false)")
        else:
            lines.append(f"execute_code: on — {self.sandbox.describe()}")
        lines.append("terminal: on — dangerous commands wait for /approve in the chat"
                     if self.terminal else "terminal: off (tools.terminal.enabled: false)")
        return lines


def add_acting_tools(registry: ToolRegistry, config: ToolsConfig) -> ActingTools:
    """Register the enabled acting tools (once per registry)."""
    out = ActingTools()
    code = config.code
    if code.enabled and "execute_code" not in registry:
        from agent_core.sandbox import CodeSandbox, SandboxLimits
        from agent_core.tools.builtin.code import execute_code_tool

        out.sandbox = CodeSandbox(SandboxLimits(timeout_s=code.timeout_s,
                                                memory_mb=code.memory_mb), mode=code.sandbox)
        registry.register(execute_code_tool(registry, out.sandbox, code.tools))
    term = config.terminal
    if term.enabled and "terminal" not in registry:
        from agent_core.tools.builtin.terminal import TerminalSettings, terminal_tool

        registry.register(terminal_tool(TerminalSettings(
            timeout_s=term.timeout_s, approval_timeout_s=term.approval_timeout_s)))
        out.terminal = True
    return out
