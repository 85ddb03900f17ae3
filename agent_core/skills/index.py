"""The `<available_skills>` block of the system prompt.

One line per skill (`- category/name: description`, the description cut to one short line),
sorted by (category, name), capped at `MAX_INDEX_CHARS` (what does not fit is counted, and
`skills_list` shows it). Skills for another operating system, or needing a tool the session is
not offered, are left out. The rendered block is scanned once as a whole; if the scan objects, entries
are scanned one by one and the offending ones dropped.

Built results are cached per (folder, tools, OS) and reused while no SKILL.md changed (a
stat of each, no parse), so sessions started together pay for one build. The caller (the
gateway) stores the system prompt with the session, so the index is byte-stable for its life.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection
from pathlib import Path

from agent_core.skills.format import current_os
from agent_core.skills.store import SkillEntry, SkillStore
from agent_core.threats import screen_skill

__all__ = ["INDEX_DESCRIPTION_CHARS", "MAX_INDEX_CHARS", "SKILLS_GUIDANCE", "skills_index"]

MAX_INDEX_CHARS = 8_000
INDEX_DESCRIPTION_CHARS = 80
_CACHE_SIZE = 8

SKILLS_GUIDANCE = (
    "# Skills\n"
    "Skills are notes on how to do specific tasks well, saved from earlier work. When a skill "
    "below matches the task, load it with `skill_view(name)` before starting and follow it. A "
    "`[SKILL_PRUNED: name]` marker means that skill's text was removed from the conversation "
    "to save space: call `skill_view(name)` again before relying on it. After finishing a "
    "hard task (many steps, a tricky fix), save the approach with `skill_manage` (create, "
    "or patch a skill that turned out wrong)."
)

_cache: OrderedDict[tuple[str, tuple[str, ...], str], tuple[tuple[object, ...], str]] = (
    OrderedDict())
_cache_lock = threading.Lock()


def _line(entry: SkillEntry) -> str:
    assert entry.meta is not None
    desc = entry.meta.description
    if len(desc) > INDEX_DESCRIPTION_CHARS:
        desc = desc[: INDEX_DESCRIPTION_CHARS - 3].rstrip() + "..."
    return f"- {entry.qualified}: {desc}"


def _shown(entry: SkillEntry, tools: Collection[str] | None, os_name: str) -> bool:
    meta = entry.meta
    if meta is None:
        return False
    if meta.platforms and os_name not in meta.platforms:
        return False
    return tools is None or all(t in tools for t in meta.required_tools)


def _render(lines: list[str]) -> str:
    kept: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        if used + len(line) + 1 > MAX_INDEX_CHARS:
            kept.append(f"- ... and {len(lines) - i} more (skills_list shows them all)")
            break
        kept.append(line)
        used += len(line) + 1
    return "<available_skills>\n" + "\n".join(kept) + "\n</available_skills>"


def build_index(store: SkillStore, tools: Collection[str] | None = None,
                os_name: str | None = None) -> str:
    """The skills block (guidance + `<available_skills>`), or "" when no skill is shown.
    Uncached; blocking file I/O."""
    os_name = os_name or current_os()
    lines = [_line(e) for e in store.scan() if _shown(e, tools, os_name)]
    if not lines:
        return ""
    block = _render(lines)
    if not screen_skill(block, name="index").ok:  # only what reaches the prompt is scanned
        lines = [line for line in lines if screen_skill(line, name=line[2:].split(":")[0]).ok]
        block = _render(lines)
    return SKILLS_GUIDANCE + "\n" + block if lines else ""


def skills_index(root: Path, tools: Collection[str] | None = None) -> str:
    """`build_index` for `root`, cached while no SKILL.md under it changed."""
    store = SkillStore(root)
    os_name = current_os()
    key = (str(root), tuple(sorted(tools)) if tools is not None else ("*",), os_name)
    sig = store.signature()
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] == sig:
            _cache.move_to_end(key)
            return hit[1]
    text = build_index(store, tools, os_name)
    with _cache_lock:
        _cache[key] = (sig, text)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return text
