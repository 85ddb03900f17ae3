"""`tools.code` and `tools.terminal`: the sandboxed `execute_code` tool and the `terminal` tool
with approvals in the chat (DESIGN.md §5)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gateway.config.base import ConfigModel

__all__ = ["CodeToolConfig", "SandboxMode", "TerminalToolConfig"]

SandboxMode = Literal["auto", "namespaces", "rlimits"]


class CodeToolConfig(ConfigModel):
    enabled: bool = True
    """Offer `execute_code`: a Python script run in a sandbox that may call `tools`."""
    sandbox: SandboxMode = "auto"
    """`auto`: user + network + pid namespaces when the host allows them, else resource
    limits only (said in `/tools` and the log); `namespaces`: refuse to run without them;
    `rlimits`: resource limits only (the script can reach the network)."""
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    """Wall-clock limit of one script (its CPU time is limited to the same)."""
    memory_mb: int = Field(default=512, ge=64, le=65536)
    """Address-space limit of the script's process."""
    tools: list[str] = Field(default_factory=lambda: ["web_search", "read_file"])
    """Tools the script may call through `hermes_tools` (those that exist and are on)."""


class TerminalToolConfig(ConfigModel):
    enabled: bool = False
    """Offer `terminal`: a shell command run in the user's workspace."""
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    """Wall-clock limit of one command."""
    approval_timeout_s: float = Field(default=300.0, gt=0, le=86400)
    """How long a dangerous command waits for `/approve` in the chat; silence denies."""
