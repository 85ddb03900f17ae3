"""Skills: Markdown notes on how to do a task, kept per profile in `$HERMES_HOME/skills/`,
listed in the system prompt and loaded on demand (`skills_list`, `skill_view`,
`skill_manage`)."""

from __future__ import annotations

from agent_core.skills.format import FormatError, SkillMeta, parse_skill, valid_name
from agent_core.skills.index import SKILLS_GUIDANCE, build_index, skills_index
from agent_core.skills.store import SkillEntry, SkillError, SkillStore

__all__ = [
    "SKILLS_GUIDANCE",
    "FormatError",
    "SkillEntry",
    "SkillError",
    "SkillMeta",
    "SkillStore",
    "build_index",
    "parse_skill",
    "skills_index",
    "valid_name",
]
