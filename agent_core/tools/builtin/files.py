"""File tools confined to the workspace: read_file, write_file, patch, search_files.

Every path goes through `resolve_in_workspace` (refuses `..`, outside absolute paths and
symlinks leading out). Blocking file work runs in a worker thread.

A write that would change a file the system prompt loads (a context file such as AGENTS.md
or .hermes.md, SOUL.md, or anything in the memory directory) is threat-scanned whole first
and refused, with nothing written, when it fails: the agent cannot plant instructions for
its own later sessions. (The prompt scans those files again when it loads them.)
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
from pathlib import Path

from pydantic import BaseModel, Field

from agent_core.interrupt import InterruptSignal
from agent_core.prompt import PROMPT_FILE_NAMES
from agent_core.threats import screen
from agent_core.tools.base import ToolContext
from agent_core.tools.builtin._workspace import (
    atomic_write_text,
    display_path,
    resolve_in_workspace,
)
from agent_core.tools.registry import Tool, ToolError
from hermes_common.patterns import PatternError, UntrustedPattern, compile_untrusted

__all__ = [
    "MAX_READ_BYTES",
    "MAX_WRITE_CHARS",
    "PatchArgs",
    "ReadFileArgs",
    "SearchFilesArgs",
    "WriteFileArgs",
    "file_tools",
]

MAX_READ_BYTES = 10 * 1024 * 1024
MAX_WRITE_CHARS = 5_000_000
MAX_LINE_CHARS = 2_000
MAX_SEARCH_FILE_BYTES = 2 * 1024 * 1024
MAX_FILES_SCANNED = 20_000
_SKIP_DIRS = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", ".tox"}
)


class ReadFileArgs(BaseModel):
    path: str = Field(description="File path, relative to the workspace root.")
    offset: int = Field(1, ge=1, description="First line to return (1-based).")
    limit: int = Field(500, ge=1, le=2_000, description="Maximum number of lines to return.")


class WriteFileArgs(BaseModel):
    path: str = Field(description="File path, relative to the workspace root.")
    content: str = Field(description="The complete new content of the file.")


class PatchArgs(BaseModel):
    path: str = Field(description="File path, relative to the workspace root.")
    old_string: str = Field(description="Exact text to replace; must occur exactly once.")
    new_string: str = Field(description="Replacement text.")


class SearchFilesArgs(BaseModel):
    pattern: str = Field(
        "*",
        description="Glob for file paths, e.g. '*.py' (matches file names) or 'src/**/*.ts'.",
    )
    query: str | None = Field(
        None, description="Text to find inside files; omit to list matching files."
    )
    regex: bool = Field(False, description="Treat query as a regular expression.")
    case_sensitive: bool = False
    path: str = Field(".", description="Directory to search, relative to the workspace root.")
    max_results: int = Field(50, ge=1, le=500)


def _read_bytes(path: Path, shown: str) -> bytes:
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; use search_files to list its files.")
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise ToolError(f"File not found: {shown}") from None
    if size > MAX_READ_BYTES:
        raise ToolError(
            f"{shown} is too large to read ({size:,} bytes; the limit is {MAX_READ_BYTES:,})."
        )
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise ToolError(f"{shown} looks like a binary file; only text files can be read.")
    return data


def _decode(data: bytes, shown: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{shown} is not UTF-8 text.") from None


def _read_file_sync(ws: Path, args: ReadFileArgs) -> str:
    path = resolve_in_workspace(ws, args.path)
    shown = display_path(ws, path)
    text = _read_bytes(path, shown).decode("utf-8", errors="replace")
    lines = text.splitlines()
    total = len(lines)
    if total == 0:
        return f"{shown} is empty."
    if args.offset > total:
        return f"{shown} has {total} lines; offset {args.offset} is past the end."
    end = min(total, args.offset + args.limit - 1)
    out = [f"{shown} — lines {args.offset}-{end} of {total}"]
    for n in range(args.offset, end + 1):
        line = lines[n - 1]
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + " … [line truncated]"
        out.append(f"{n:>6}|{line}")
    if end < total:
        out.append(f"[{total - end} more lines; continue with offset={end + 1}]")
    return "\n".join(out)


_PROMPT_NAMES = frozenset(n.lower() for n in PROMPT_FILE_NAMES)


def _refuse_prompt_poison(path: Path, shown: str, text: str, memory_dir: Path | None) -> None:
    """Raise ToolError when `path` is a file the prompt loads and `text` fails the scan."""
    in_memory = memory_dir is not None and path.is_relative_to(memory_dir.resolve(strict=False))
    if not in_memory and path.name.lower() not in _PROMPT_NAMES:
        return
    finding = screen(
        text, source=shown, kind="tool_write", scope="strict" if in_memory else "context"
    ).finding
    if finding is not None:
        raise ToolError(
            f"Refused: {shown} is loaded into the system prompt of later sessions and this "
            f"content {finding.reason} (pattern {finding.pattern_id}). Nothing was written."
        )


def _write_file_sync(ws: Path, args: WriteFileArgs, memory_dir: Path | None = None) -> str:
    if len(args.content) > MAX_WRITE_CHARS:
        raise ToolError(f"Content too large ({len(args.content):,} chars; limit {MAX_WRITE_CHARS:,}).")
    path = resolve_in_workspace(ws, args.path)
    shown = display_path(ws, path)
    if path.is_dir():
        raise ToolError(f"{shown} is a directory.")
    _refuse_prompt_poison(path, shown, args.content, memory_dir)
    existed = path.exists()
    written = atomic_write_text(path, args.content)
    lines = args.content.count("\n") + (0 if args.content.endswith("\n") or not args.content else 1)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {shown}: {written:,} bytes, {lines} lines."


def _patch_sync(ws: Path, args: PatchArgs, memory_dir: Path | None = None) -> str:
    if not args.old_string:
        raise ToolError("old_string must not be empty.")
    if args.old_string == args.new_string:
        raise ToolError("old_string and new_string are identical; nothing to change.")
    path = resolve_in_workspace(ws, args.path)
    shown = display_path(ws, path)
    text = _decode(_read_bytes(path, shown), shown)
    count = text.count(args.old_string)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {shown}. Read the file again and copy the text "
            f"exactly (whitespace and indentation included)."
        )
    if count > 1:
        raise ToolError(
            f"old_string occurs {count} times in {shown}; include more surrounding text so it "
            f"matches exactly once."
        )
    at = text.index(args.old_string)
    line = text.count("\n", 0, at) + 1
    patched = text.replace(args.old_string, args.new_string, 1)
    _refuse_prompt_poison(path, shown, patched, memory_dir)
    atomic_write_text(path, patched)
    removed = args.old_string.count("\n") + 1
    added = args.new_string.count("\n") + 1
    return f"Patched {shown} at line {line}: replaced {removed} line(s) with {added}."


def _glob_match(rel: str, name: str, pattern: str) -> bool:
    if "/" not in pattern:
        return fnmatch.fnmatchcase(name, pattern)
    if fnmatch.fnmatchcase(rel, pattern):
        return True
    flat = pattern.replace("/**/", "/").removeprefix("**/")  # '**/' may match no directory
    return flat != pattern and fnmatch.fnmatchcase(rel, flat)


def _search_sync(ws: Path, args: SearchFilesArgs, interrupt: InterruptSignal) -> str:
    root_ws = Path(ws).resolve(strict=False)
    base = resolve_in_workspace(ws, args.path)
    if not base.is_dir():
        raise ToolError(f"{display_path(ws, base)} is not a directory.")
    matcher: UntrustedPattern | None = None
    if args.query:  # the model's pattern: RE2, linear time (never `re`, see hermes_common)
        try:
            matcher = compile_untrusted(args.query, ignore_case=not args.case_sensitive,
                                        literal=not args.regex)
        except PatternError as exc:
            raise ToolError(f"{str(exc)[0].upper()}{str(exc)[1:]}.") from None
    hits: list[str] = []
    files_hit: set[str] = set()
    scanned = 0
    capped = False
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            if interrupt.is_set or scanned >= MAX_FILES_SCANNED or capped:
                break
            full = Path(dirpath, name)
            rel = full.relative_to(root_ws).as_posix()
            if not _glob_match(rel, name, args.pattern):
                continue
            if full.is_symlink() and not full.resolve().is_relative_to(root_ws):
                continue
            scanned += 1
            if matcher is None:
                hits.append(rel)
                capped = len(hits) >= args.max_results
                continue
            capped = _grep_file(full, rel, matcher, hits, files_hit, args.max_results)
    if not hits:
        what = f"text {args.query!r}" if args.query else "files"
        return f"No {what} found matching {args.pattern!r} under {display_path(ws, base)}."
    if matcher is None:
        head = f"{len(hits)} file(s) matching {args.pattern!r}"
    else:
        head = f"{len(hits)} match(es) in {len(files_hit)} file(s)"
    if capped:
        head += f" (stopped at max_results={args.max_results})"
    return head + ":\n" + "\n".join(hits)


def _grep_file(
    full: Path, rel: str, matcher: UntrustedPattern, hits: list[str], files: set[str], cap: int
) -> bool:
    try:
        if full.stat().st_size > MAX_SEARCH_FILE_BYTES:
            return False
        data = full.read_bytes()
    except OSError:
        return False
    if b"\x00" in data[:8192]:
        return False
    for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        if matcher.search(line):
            files.add(rel)
            hits.append(f"{rel}:{n}: {line.strip()[:300]}")
            if len(hits) >= cap:
                return True
    return False


async def read_file(args: ReadFileArgs, ctx: ToolContext) -> str:
    return await asyncio.to_thread(_read_file_sync, ctx.workspace, args)


async def write_file(args: WriteFileArgs, ctx: ToolContext) -> str:
    return await asyncio.to_thread(_write_file_sync, ctx.workspace, args, ctx.memory_dir)


async def patch(args: PatchArgs, ctx: ToolContext) -> str:
    return await asyncio.to_thread(_patch_sync, ctx.workspace, args, ctx.memory_dir)


async def search_files(args: SearchFilesArgs, ctx: ToolContext) -> str:
    return await asyncio.to_thread(_search_sync, ctx.workspace, args, ctx.interrupt)


def file_tools() -> list[Tool]:
    return [
        Tool(
            "read_file",
            "Read a text file from the workspace with line numbers (`N|text`). Use offset/limit "
            "for long files.",
            ReadFileArgs,
            read_file,
            toolset="files",
            parallel_safe=True,
            path_arg="path",
        ),
        Tool(
            "write_file",
            "Create or overwrite a file in the workspace with the given content (written "
            "atomically). Parent directories are created.",
            WriteFileArgs,
            write_file,
            toolset="files",
            path_arg="path",
            interruptible=False,
        ),
        Tool(
            "patch",
            "Edit a file by replacing one exact occurrence of old_string with new_string. "
            "old_string must match exactly once; include surrounding lines to make it unique.",
            PatchArgs,
            patch,
            toolset="files",
            path_arg="path",
            interruptible=False,
        ),
        Tool(
            "search_files",
            "Find files by glob and, optionally, lines containing a text or regex. Results "
            "are capped by max_results.",
            SearchFilesArgs,
            search_files,
            toolset="files",
            parallel_safe=True,
        ),
    ]
