"""Built-in tools: memory, session_search, todo, clarify, the workspace file tools and the
skills tools."""

from __future__ import annotations

from agent_core.tools.builtin.clarify import clarify_tool
from agent_core.tools.builtin.files import file_tools
from agent_core.tools.builtin.memory import memory_tool
from agent_core.tools.builtin.session_search import session_search_tool
from agent_core.tools.builtin.skills import skill_tools
from agent_core.tools.builtin.todo import todo_tool
from agent_core.tools.registry import Tool

__all__ = ["builtin_tools"]


def builtin_tools() -> list[Tool]:
    """Fresh definitions of every built-in tool, in a stable order."""
    return [
        memory_tool(),
        session_search_tool(),
        todo_tool(),
        clarify_tool(),
        *file_tools(),
        *skill_tools(),
    ]
