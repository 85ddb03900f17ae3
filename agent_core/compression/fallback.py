"""Deterministic no-LLM fallback: drop the middle behind a marker that lists what was dropped.

Used only when configured (`deterministic_fallback`), after a summarizer failure or for the
feasibility skip. The body keeps the template's headings, counts every dropped message by role
and tool, quotes the newest user request, lists up to 12 recent tool actions and up to 12 file
paths, and carries the previous summary over unchanged so nothing summarized before is lost.
Only the newest 400 dropped messages are read for details, so the cost stays bounded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from agent_core.compression.messages import Message, role_of, text_of
from agent_core.compression.oneliners import describe_tool_result, parse_arguments
from hermes_common.redact import redact

__all__ = ["build_fallback_summary"]

_SCAN = 400
_LIST_MAX = 12
_QUOTE_CHARS = 700
_PATH_KEYS = ("path", "file_path", "filename", "workdir", "output_path")


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _QUOTE_CHARS else flat[: _QUOTE_CHARS - 15] + " ...[truncated]"


def build_fallback_summary(
    turns: Sequence[Message],
    index: dict[str, tuple[str, str]],
    *,
    previous: str | None,
    reason: str,
    markers: Sequence[str],
) -> str:
    """Summary body (without prefix) for dropped `turns`. Must not raise."""
    roles = Counter(role_of(m) for m in turns)
    tools: Counter[str] = Counter()
    for m in turns:
        if role_of(m) == "tool":
            tools[index.get(str(m.get("tool_call_id")), (str(m.get("name") or "tool"), ""))[0]] += 1
    recent = turns[-_SCAN:]
    last_user = next(
        (text_of(m.get("content")) for m in reversed(recent) if role_of(m) == "user"), ""
    )
    actions: list[str] = []
    files: dict[str, None] = {}
    for m in recent:
        if role_of(m) == "tool":
            name, args = index.get(str(m.get("tool_call_id")), (str(m.get("name") or "tool"), ""))
            actions.append(describe_tool_result(name, args, text_of(m.get("content"))))
        for call in m.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                parsed = parse_arguments(fn["arguments"])
                for key in _PATH_KEYS:
                    if isinstance(parsed.get(key), str):
                        files.setdefault(parsed[key][:200], None)
    tool_list = ", ".join(f"{n} ×{c}" for n, c in tools.most_common(8)) or "none"
    numbered = "\n".join(f"{i}. {a}" for i, a in enumerate(actions[-_LIST_MAX:], 1)) or "None."
    lines = [
        "## Historical Task Snapshot",
        _quote(last_user) if last_user.strip() else "None recorded in the dropped turns.",
        "## Goal",
        "Not summarized: these turns were dropped by the deterministic fallback "
        "(no summarizer output was available).",
        "## Constraints & Preferences",
        "Unknown (not summarized).",
        "## Completed Actions",
        numbered,
        "## Active State",
        "Unknown (not summarized); check the current state before continuing.",
        "## Blocked",
        "Unknown (not summarized).",
        "## Key Decisions",
        "Unknown (not summarized).",
        "## Resolved Questions",
        "Unknown (not summarized).",
        "## Relevant Files",
        "\n".join(f"- {p}" for p in list(files)[-_LIST_MAX:]) or "None recorded.",
        "## Critical Context",
        f"Dropped {len(turns):,} messages: {roles.get('user', 0)} user, "
        f"{roles.get('assistant', 0)} assistant, {roles.get('tool', 0)} tool results "
        f"(tools: {tool_list}). Summary failure reason: {reason}.",
        "## Pruned Skills",
        "\n".join(markers) or "None.",
    ]
    if previous:
        lines += ["## Previous Summary (carried over unchanged)", previous]
    return redact("\n".join(lines))
