"""`/tools`: which tools this chat's session is offered, and why the others are not."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from agent_core.tools.toolsets import OffTool, ToolSelection
from gateway.commands.context import CommandContext

__all__ = ["ToolsInfo", "format_tools", "tools_command"]

#: Most tool names listed per line before "and N more".
_NAMES_PER_LINE = 12


class ToolsInfo(Protocol):
    """What `/tools` needs from the turn layer (`gateway.turns.AgentBuilder`)."""

    def current_tools(self, session_id: str) -> ToolSelection | None:
        """The selection the session uses in this process (None before its first turn)."""
        ...

    def next_tools(self, platform: str, chat_id: str) -> ToolSelection:
        """What a new session in this chat would be offered now."""
        ...

    def confinement(self) -> list[str]:
        """How the tools that act are confined (execute_code's sandbox, terminal's approvals)."""
        ...


def _names(names: list[str]) -> str:
    if len(names) <= _NAMES_PER_LINE:
        return ", ".join(names)
    return ", ".join(names[:_NAMES_PER_LINE]) + f" and {len(names) - _NAMES_PER_LINE} more"


def _by_toolset(selection: ToolSelection) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for tool in selection.tools:
        groups.setdefault(tool.toolset, []).append(tool.name)
    return groups


def _off_lines(off: Iterable[OffTool]) -> list[str]:
    grouped: dict[tuple[str, str], list[str]] = {}
    for item in off:
        grouped.setdefault((item.toolset, item.reason), [])
        if item.name:
            grouped[(item.toolset, item.reason)].append(item.name)
    lines = []
    for (toolset, reason), names in grouped.items():
        what = f"{toolset}: {_names(names)}" if names else toolset
        lines.append(f"• {what} — {reason}")
    return lines


def format_tools(current: ToolSelection | None, upcoming: ToolSelection,
                 confinement: Iterable[str] = ()) -> str:
    """The `/tools` reply: the session's tools by toolset, what is off and why, and what a
    new session would change."""
    shown = current or upcoming
    head = "This session's tools" if current is not None else "Tools of the next session"
    lines = [f"🧰 {head} ({len(shown.tools)}):"]
    groups = _by_toolset(shown)
    lines += [f"• {toolset}: {_names(names)}" for toolset, names in groups.items()]
    if not groups:
        lines.append("• none")
    off = _off_lines(shown.off)
    if off:
        lines.append("Off:")
        lines += off
    if current is not None:
        now, nxt = set(current.names()), upcoming.names()
        gained = [n for n in nxt if n not in now]
        lost = [n for n in current.names() if n not in set(nxt)]
        if gained or lost:
            lines.append("A new session (/new) would change this:")
            if gained:
                lines.append(f"• added: {_names(gained)}")
            if lost:
                lines.append(f"• removed: {_names(lost)}")
    confined = [f"• {line}" for line in confinement]
    if confined:
        lines.append("How the tools that act are confined:")
        lines += confined
    return "\n".join(lines)


async def tools_command(c: CommandContext) -> str:
    info = c.services.tools
    if info is None:
        return "Tool information is not available here."
    session = await c.session()
    current = info.current_tools(session.id) if session is not None else None
    return format_tools(current, info.next_tools(c.event.platform, c.event.chat_id),
                        info.confinement())
