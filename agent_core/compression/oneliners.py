"""Informative one-line descriptions of old tool results.

Built from the tool name, the call's arguments and the output, e.g.
``[terminal] ran `npm test` -> exit 0, 47 lines output`` or
``[read_file] read config.py from line 1 (3,400 chars)``. Only the first and last 600 characters
of an output are scanned (exit codes, counts, the last line); lines are counted exactly up to
4 KiB and extrapolated from the first and last 512 characters beyond ("~1,200 lines"), so the cost
does not grow with the output size.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hermes_common.redact import redact

__all__ = ["describe_tool_result", "parse_arguments", "skill_marker"]

_EDGE = 600
_EXACT_LINES_CHARS = 4_096
_COUNT_EDGE = 512
_EXIT_RE = re.compile(
    r"(?:exit[_ ]?code|returncode|exit status|exited with(?: code)?)[\"']?\s*[:=]?\s*(-?\d+)"
)
_COUNT_RE = re.compile(r"\"?(?:total_count|total|matches|count)\"?\s*[:=]\s*(\d+)")
_SHELL = frozenset({"terminal", "shell", "bash", "run_command", "execute_command", "exec", "process"})
_READ = frozenset({"read_file", "view_file", "cat", "open_file"})
_WRITE = frozenset({"write_file", "create_file"})
_SEARCH = frozenset({"search_files", "grep", "search", "find_files", "glob"})
_EDIT = frozenset({"patch", "edit_file", "apply_patch", "str_replace", "replace_in_file"})


def parse_arguments(raw: str) -> dict[str, Any]:
    """JSON tool-call arguments as a dict ({} when not a JSON object). Must not raise."""
    if not raw or raw[0] != "{":
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _clip(value: Any, limit: int) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _edges(content: str) -> str:
    if len(content) <= 2 * _EDGE:
        return content
    return content[:_EDGE] + "\n" + content[-_EDGE:]


def _last_line(content: str) -> str:
    tail = content[-_EDGE:].rstrip()
    cut = tail.rfind("\n")
    return tail[cut + 1 :].strip() if cut >= 0 else tail.strip()


def _exit_code(lowered: str) -> str:
    for needle in ("exit", "returncode"):
        pos = lowered.find(needle)
        while pos >= 0:
            match = _EXIT_RE.match(lowered, pos)
            if match:
                return match.group(1)
            pos = lowered.find(needle, pos + 1)
    return "?"


def _first(args: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        value = args.get(key)
        if value not in (None, "", [], {}):
            return value
    return None


def skill_marker(name: str, arguments: str) -> str | None:
    """`[SKILL_PRUNED: <skill>]` for a `skill_view` call (None for any other tool): what an
    old skill result leaves behind, kept verbatim by the summary."""
    if name.lower() != "skill_view":
        return None
    skill = _clip(_first(parse_arguments(arguments), "name") or "?", 64)
    return f"[SKILL_PRUNED: {skill.replace(']', '')}]"


def _line_count(content: str) -> str:
    """Exact up to `_EXACT_LINES_CHARS`; beyond, extrapolated from the edges ("~N")."""
    if not content or content.isspace():
        return "0"
    if len(content) <= _EXACT_LINES_CHARS:
        return str(content.count("\n") + 1)
    sample = 2 * _COUNT_EDGE
    newlines = content.count("\n", 0, _COUNT_EDGE) + content.count("\n", len(content) - _COUNT_EDGE)
    return f"~{round(newlines * len(content) / sample) + 1:,}"


def _describe(name: str, args: dict[str, Any], content: str) -> str:
    chars = len(content)
    base = name.lower()
    if base in _SHELL:
        cmd = _clip(_first(args, "command", "cmd", "script") or "?", 80)
        code = _exit_code(_edges(content).lower())
        lines = _line_count(content)
        text = f"[{name}] ran `{cmd}` -> exit {code}, {lines} lines output"
        if code not in ("0", "?") and lines != "0":
            text += f"; last line: {_clip(_last_line(content), 100)}"
        return text
    path = _first(args, "path", "file_path", "filename", "file", "target")
    if base in _READ:
        start = _first(args, "offset", "start_line", "line") or 1
        return f"[{name}] read {path or '?'} from line {start} ({chars:,} chars)"
    if base in _WRITE:
        body = _first(args, "content", "text")
        written = str(body).count("\n") + 1 if body else "?"
        return f"[{name}] wrote to {path or '?'} ({written} lines)"
    if base in _SEARCH:
        pattern = _clip(_first(args, "pattern", "query", "regex", "glob") or "?", 60)
        match = _COUNT_RE.search(_edges(content).lower())
        found = match.group(1) if match else _line_count(content)
        return f"[{name}] search for '{pattern}' in {path or '.'} -> {found} matches"
    if base in _EDIT:
        mode = _first(args, "mode", "action") or "replace"
        return f"[{name}] {mode} in {path or '?'} ({chars:,} chars result)"
    if base.startswith("browser") or base in ("web_extract", "fetch", "http_get", "fetch_url"):
        url = _first(args, "url", "urls", "href", "ref")
        if isinstance(url, list):
            extra = f" (+{len(url) - 1} more)" if len(url) > 1 else ""
            url = f"{url[0]}{extra}" if url else "?"
        return f"[{name}] {_clip(url or '?', 100)} ({chars:,} chars)"
    if base == "skill_view":
        # Kept verbatim by the summarizer; the skills guidance tells the model to reload.
        skill = _clip(_first(args, "name") or "?", 64).replace("]", "")
        res = _first(args, "file_path")
        what = f" file {_clip(res, 80)}" if res else ""
        return (f"[SKILL_PRUNED: {skill}] skill_view{what} ({chars:,} chars) was removed; "
                "call skill_view again before using it")
    if base in ("web_search", "search_web"):
        query = _clip(_first(args, "query", "q") or "?", 80)
        return f"[{name}] query='{query}' ({chars:,} chars result)"
    pairs = [f"{k}={_clip(v, 40)}" for k, v in list(args.items())[:3]]
    joined = (" " + " ".join(pairs)) if pairs else ""
    return f"[{name}]{joined} ({chars:,} chars result)"


def describe_tool_result(
    name: str, arguments: str, content: str, *, redact_output: bool = True
) -> str:
    """One line describing a tool result (redacted unless the caller redacts later).
    Must not raise."""
    try:
        line = _describe(name or "tool", parse_arguments(arguments), content)
        return redact(line) if redact_output else line
    except Exception:  # noqa: BLE001 - a description must never break compression
        return f"[{name or 'tool'}] ({len(content):,} chars result)"
