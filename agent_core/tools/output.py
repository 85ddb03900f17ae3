"""Keep big tool outputs out of the model's context (and off the heap of the history).

An output longer than the limit is cut to its head and tail with a note in the middle saying
how much was left out and where the complete text was saved (`output_dir`, one file per call).
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "PREVIEW_CHARS",
    "TruncatedOutput",
    "preview",
    "truncate_output",
]

DEFAULT_MAX_OUTPUT_CHARS = 30_000
PREVIEW_CHARS = 200
_HEAD_SHARE = 0.7
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True, slots=True)
class TruncatedOutput:
    content: str
    full_output_path: Path | None


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """A one-line excerpt of a result for status events (whitespace collapsed)."""
    flat = " ".join(text[: limit * 4].split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _save(output_dir: Path, call_id: str, name: str, text: str) -> Path:
    output_dir.mkdir(parents=True, exist_ok=True)
    stem = _UNSAFE.sub("_", f"{name}-{call_id}")[:120] or "output"
    fd, tmp = tempfile.mkstemp(dir=output_dir, prefix=".out_", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8", errors="replace", newline="") as fh:
        fh.write(text)
    final = output_dir / f"{stem}.txt"
    os.replace(tmp, final)
    return final


async def truncate_output(
    text: str,
    *,
    max_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    output_dir: Path | None,
    call_id: str,
    name: str,
) -> TruncatedOutput:
    """Return `text` unchanged when it fits, else head + note + tail.

    The complete text is written (off the event loop) to `output_dir/<name>-<call_id>.txt`
    when `output_dir` is set. Must not raise: a failed save is reported in the note.
    """
    if len(text) <= max_chars:
        return TruncatedOutput(text, None)
    path: Path | None = None
    where = "the full output was not kept (no output directory configured)"
    if output_dir is not None:
        try:
            path = await asyncio.to_thread(_save, output_dir, call_id, name, text)
            where = f"the full output is saved at {path}"
        except OSError as exc:
            where = f"saving the full output failed ({exc.strerror or type(exc).__name__})"
    budget = max(max_chars - 300, 200)
    head = int(budget * _HEAD_SHARE)
    tail = budget - head
    omitted = len(text) - head - tail
    note = (
        f"\n\n[... output truncated: {omitted:,} of {len(text):,} characters omitted from the "
        f"middle; {where} ...]\n\n"
    )
    return TruncatedOutput(text[:head] + note + text[-tail:], path)
