"""The skills tools (toolset `skills`): `skills_list`, `skill_view`, `skill_manage`.

They work on `ToolContext.skills_dir` (the profile's skills; shared knowledge, not per user)
and record `ToolContext.principal` with every write (`agent_core.skills.store`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Literal

from pydantic import BaseModel, Field

from agent_core.skills.store import MAX_VIEW_CHARS, SkillError, SkillStore
from agent_core.tools.base import ToolContext
from agent_core.tools.registry import Tool, ToolError

__all__ = ["SKILLS_TOOLSET", "skill_tools"]

SKILLS_TOOLSET = "skills"
_LIST_MAX = 200
#: Room for `MAX_VIEW_CHARS` of skill text in the JSON result (escaped newlines, file list),
#: so a long skill is cut by `skill_view` itself, at a note, not by the generic output cap.
_VIEW_OUTPUT_CHARS = MAX_VIEW_CHARS + MAX_VIEW_CHARS // 4


def _store(ctx: ToolContext) -> SkillStore:
    if ctx.skills_dir is None:
        raise ToolError("Skills are not available in this session.")
    return SkillStore(ctx.skills_dir, origin=ctx.origin)


class ListArgs(BaseModel):
    category: str | None = Field(None, description="Only skills of this category.")


class ViewArgs(BaseModel):
    name: str = Field(description="Skill name, or category/name.")
    file_path: str | None = Field(
        None, description="A resource file of the skill (relative path, e.g. "
        "'references/api.md'); omit for SKILL.md.")


class ManageArgs(BaseModel):
    action: Literal["create", "patch", "edit", "delete", "write_file"]
    name: str = Field(description="Skill name (lower-case letters, digits, '.', '_', '-').")
    content: str | None = Field(
        None, description="Whole SKILL.md for create/edit: '---' frontmatter with name and "
        "description, '---', then the Markdown body.")
    category: str | None = Field(None, description="Category folder for create.")
    old_string: str | None = Field(None, description="Exact text to replace (patch).")
    new_string: str | None = Field(None, description="Replacement text (patch).")
    replace_all: bool = Field(False, description="patch: replace every occurrence.")
    file_path: str | None = Field(
        None, description="patch/write_file: a resource file of the skill (relative path).")
    file_content: str | None = Field(None, description="write_file: the file's text.")


def _list(store: SkillStore, category: str | None) -> str:
    entries = [e for e in store.scan() if category is None or e.category == category]
    skills = [{"name": e.name, "category": e.category,
               "description": e.meta.description if e.meta else f"(broken: {e.error})"}
              for e in entries[:_LIST_MAX]]
    cats = sorted({e.category for e in store.scan() if e.category})
    return json.dumps({"success": True, "count": len(entries), "skills": skills,
                       "categories": cats,
                       "hint": "Load one with skill_view(name)."}, ensure_ascii=False)


async def skills_list(args: ListArgs, ctx: ToolContext) -> str:
    return await asyncio.to_thread(_list, _store(ctx), args.category)


def _view(store: SkillStore, args: ViewArgs) -> str:
    entry, text = store.view(args.name, args.file_path)
    out: dict[str, object] = {"success": True, "name": entry.name, "category": entry.category,
                              "file": args.file_path or "SKILL.md", "content": text}
    if not args.file_path:
        out["linked_files"] = store.resources(entry)
    return json.dumps(out, ensure_ascii=False)


async def skill_view(args: ViewArgs, ctx: ToolContext) -> str:
    try:
        return await asyncio.to_thread(_view, _store(ctx), args)
    except SkillError as exc:
        raise ToolError(str(exc)) from None


def _manage(store: SkillStore, args: ManageArgs, who: str | None) -> dict[str, object]:
    name = args.name.strip()
    if args.action in ("create", "edit") and not args.content:
        raise SkillError(f"content (the whole SKILL.md) is required for {args.action}")
    if args.action == "create":
        entry = store.create(name, args.content or "", category=args.category, principal=who)
        return {"message": f"Created skill {entry.qualified}."}
    if args.action == "edit":
        entry = store.edit(name, args.content or "", principal=who)
        return {"message": f"Rewrote {entry.qualified}/SKILL.md."}
    if args.action == "patch":
        n = store.patch(name, args.old_string or "", args.new_string or "",
                        replace_all=args.replace_all, file_path=args.file_path, principal=who)
        return {"message": f"Patched {n} place(s) in {args.file_path or 'SKILL.md'}."}
    if args.action == "write_file":
        if not args.file_path or args.file_content is None:
            raise SkillError("write_file needs file_path and file_content")
        store.write_file(name, args.file_path, args.file_content, principal=who)
        return {"message": f"Wrote {args.file_path} in skill {name}."}
    entry = store.delete(name, principal=who)
    return {"message": f"Deleted skill {entry.qualified}."}


async def skill_manage(args: ManageArgs, ctx: ToolContext) -> str:
    store = _store(ctx)
    try:
        out = await asyncio.to_thread(_manage, store, args, ctx.principal)
    except SkillError as exc:
        raise ToolError(str(exc)) from None
    out = {"success": True, **out,
           "note": "Saved to disk; the skills index in the system prompt updates from the "
                   "next session (skill_view works now)."}
    return json.dumps(out, ensure_ascii=False)


def skill_tools() -> list[Tool]:
    """Fresh definitions of the three skills tools."""
    return [
        Tool("skills_list", "List the saved skills (name, category, one-line description).",
             ListArgs, skills_list, toolset=SKILLS_TOOLSET, parallel_safe=True),
        Tool("skill_view", "Load a skill's instructions (SKILL.md) or one of its resource "
             "files. Load a skill before following it.",
             ViewArgs, skill_view, toolset=SKILLS_TOOLSET, parallel_safe=True,
             max_output_chars=_VIEW_OUTPUT_CHARS),
        Tool("skill_manage", "Create, patch, edit or delete a skill, or write a resource file "
             "beside its SKILL.md. Save an approach after a hard task; patch a skill that "
             "turned out wrong.", ManageArgs, skill_manage, toolset=SKILLS_TOOLSET,
             interruptible=False),
    ]
