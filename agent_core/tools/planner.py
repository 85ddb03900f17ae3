"""Split one batch of tool calls into segments that may run concurrently.

Rules (from the design seed):
- an interactive tool (`clarify`) is a barrier: it runs alone;
- read-only tools (`parallel_safe`) may share a parallel run: the built-in readers, and an
  MCP server's tools that declare `readOnlyHint` (any other MCP tool is treated as a writer
  and runs alone, in order);
- path-scoped tools (`read_file`, `write_file`, `patch`) may share a run only when their
  canonical paths do not overlap (same path, or one an ancestor of the other) — two readers of
  the same path never conflict;
- anything else (unknown tools, bad arguments, side-effecting tools) runs alone, in order;
  so do `execute_code` and `terminal`, which are neither read-only nor path-scoped (a script
  or a command may touch any file of the workspace): they never run beside a writer, nor
  beside anything else of their batch.
A conflicting call closes the current run and starts the next one, so it runs after the call
it conflicts with. Segment order follows call order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["PlanItem", "Segment", "canonical_path", "paths_overlap", "plan_batches"]


@dataclass(frozen=True, slots=True)
class PlanItem:
    """What the planner needs to know about one call.

    `parallel` is False for barriers; `path` is the canonical target of a path-scoped call;
    `writes` marks calls that modify their path (conflict even with readers).
    """

    parallel: bool
    path: Path | None = None
    writes: bool = False


@dataclass(slots=True)
class Segment:
    """Indices into the call list, in call order; `parallel` runs them concurrently."""

    indices: list[int] = field(default_factory=list)
    parallel: bool = False


def canonical_path(raw: str, base: Path) -> Path:
    """`raw` made absolute against `base`, symlinks resolved (the file need not exist)."""
    p = Path(raw)
    if not p.is_absolute():
        p = base / p
    return Path(p).resolve(strict=False)


def paths_overlap(a: Path, b: Path) -> bool:
    """Same path, or one is an ancestor directory of the other."""
    return a == b or a.is_relative_to(b) or b.is_relative_to(a)


def _conflicts(item: PlanItem, run: list[PlanItem]) -> bool:
    if item.path is None:
        return False
    return any(
        other.path is not None
        and (item.writes or other.writes)
        and paths_overlap(item.path, other.path)
        for other in run
    )


def plan_batches(items: Sequence[PlanItem]) -> list[Segment]:
    """Segments covering every index of `items` exactly once, in order. Pure; never raises."""
    segments: list[Segment] = []
    run: list[int] = []

    def close_run() -> None:
        if len(run) > 1:
            segments.append(Segment(list(run), parallel=True))
        elif run:
            segments.append(Segment(list(run), parallel=False))
        run.clear()

    for i, item in enumerate(items):
        if not item.parallel:
            close_run()
            segments.append(Segment([i], parallel=False))
            continue
        if _conflicts(item, [items[j] for j in run]):
            close_run()
        run.append(i)
    close_run()
    return segments
