"""The status lines a turn shows under its streaming preview (tools, subtasks)."""

from __future__ import annotations

from agent_core import events as ae

__all__ = ["progress_line", "subtasks_line"]


def progress_line(policy: str, seen: list[str], name: str) -> str | None:
    """The status line under the streaming preview. off: none. new: the current tool, shown
    when a different tool starts. all: the latest calls, one line each (last five)."""
    if policy == "off":
        return None
    repeat = bool(seen) and seen[-1] == name
    seen.append(name)
    if policy == "all":
        return "\n".join(f"🔧 {n}" for n in seen[-5:])
    return None if repeat else f"🔧 {name}…"


def subtasks_line(ev: ae.SubtaskProgress) -> str:
    """The status line of a running `delegate_task`: "3 subtasks running", then how many
    wait and are done, as they finish."""
    if ev.running == 0 and ev.waiting == 0:
        return f"✅ {ev.total} subtask{'s' if ev.total != 1 else ''} done"
    parts = [f"{ev.running} subtask{'s' if ev.running != 1 else ''} running"]
    if ev.waiting:
        parts.append(f"{ev.waiting} waiting")
    if ev.done:
        parts.append(f"{ev.done} of {ev.total} done")
    return "🔀 " + ", ".join(parts)
