"""`platforms.cli`: the settings of the terminal chat adapter (`hermes chat`)."""

from __future__ import annotations

from gateway.ports import PlatformSettings, ToolProgress

__all__ = ["CliSettings"]


class CliSettings(PlatformSettings):
    """A Unix socket `hermes chat` connects to. Only this machine's user who runs the gateway
    can open it (mode 0600), so its user is the operator: the gateway's allow-lists and
    pairing do not apply, and it is an admin."""

    socket_path: str | None = None
    """Where the socket lives (default: `run/cli.sock` in the profile folder)."""
    require_mention: bool = False
    tool_progress: ToolProgress | None = "all"
    """The terminal shows every tool call as a one-line progress note."""
