"""`/skills`: the profile's skills, and whether this session's prompt lists them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Protocol

from agent_core.skills import SkillStore
from gateway.commands.context import CommandContext

__all__ = ["SkillsInfo", "format_skills", "skills_command"]

#: Most skills listed in the reply before "and N more".
MAX_LISTED = 40


class SkillsInfo(Protocol):
    """What `/skills` needs from the turn layer (`gateway.turns.AgentBuilder`)."""

    def skills_root(self) -> Path | None:
        """The profile's skills folder, None when `skills.enabled` is false."""
        ...


def format_skills(root: Path) -> str:
    """The `/skills` reply (blocking: reads every SKILL.md's frontmatter)."""
    entries = SkillStore(root).scan()
    if not entries:
        return ("📚 No skills yet. The agent saves one with skill_manage after a hard task; "
                "an operator can add one with `hermes skills install`.")
    lines = [f"📚 Skills ({len(entries)}):"]
    for e in entries[:MAX_LISTED]:
        desc = e.meta.description if e.meta else f"(broken: {e.error})"
        if len(desc) > 100:
            desc = desc[:97] + "..."
        lines.append(f"• {e.qualified} — {desc}")
    if len(entries) > MAX_LISTED:
        lines.append(f"… and {len(entries) - MAX_LISTED} more")
    lines.append("The agent loads one with skill_view; skills saved during a session are "
                 "listed in its prompt from the next session (/new).")
    return "\n".join(lines)


async def skills_command(c: CommandContext) -> str:
    info = c.services.skills
    root = info.skills_root() if info is not None else None
    if root is None:
        return "Skills are off in this profile (skills.enabled: false)."
    return await asyncio.to_thread(format_skills, root)
