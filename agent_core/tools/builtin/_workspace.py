"""Confinement of file tools to the workspace root, and atomic file writes."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from agent_core.tools.registry import ToolError

__all__ = ["atomic_write_text", "display_path", "resolve_in_workspace"]


def _root(workspace: Path) -> Path:
    return Path(workspace).resolve(strict=False)


def resolve_in_workspace(workspace: Path, raw: str) -> Path:
    """The real path of `raw` (relative to the workspace, or absolute inside it).

    Raises ToolError when the path is empty, holds a NUL byte, or its real location (after
    `..` and symlinks are resolved) is outside the workspace.
    """
    if not raw or not raw.strip():
        raise ToolError("A path is required.")
    if "\x00" in raw:
        raise ToolError("Invalid path: it contains a NUL byte.")
    root = _root(workspace)
    candidate = Path(raw)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        real = candidate.resolve(strict=False)
    except (OSError, RuntimeError) as exc:
        raise ToolError(f"Invalid path {raw!r}: it cannot be resolved ({type(exc).__name__}).") from None
    if real != root and not real.is_relative_to(root):
        raise ToolError(
            f"Access denied: {raw!r} is outside the workspace; file tools may only use paths "
            f"inside the workspace (no '..', outside absolute paths or symlinks leading out)."
        )
    return real


def display_path(workspace: Path, path: Path) -> str:
    """`path` relative to the workspace root, for messages."""
    root = _root(workspace)
    try:
        rel = path.relative_to(root)
    except ValueError:
        return str(path)
    return rel.as_posix() or "."


def atomic_write_text(path: Path, text: str) -> int:
    """Write `text` (UTF-8) via a temp file in the same directory, fsync and `os.replace`.

    Keeps the permission bits of an existing file. Returns the bytes written. Raises OSError;
    the temp file never survives a failure.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode if mode is not None else 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return len(data)
