"""The agent's persistent memory: `MEMORY.md` (its own notes) and `USER.md` (who the user is).

`MEMORY.md` lives in `memory_dir`, `USER.md` in `user_dir` (the same folder unless the caller
keeps one per user). Each file is a list of entries separated
by a line holding only `§`. Sizes are counted in characters (model-independent) with limits of
2,200 and 1,375. Every write is threat-scanned before anything is touched, applied under a
lock (a thread lock plus an advisory file lock for other processes) on a fresh read of the
file, and written atomically (temp file in the same directory, fsync, `os.replace`).

Writes reach disk at once, but the text placed in the system prompt is a snapshot frozen the
first time `snapshot()` is called; it changes only when `refresh_snapshot()` is called (a new
session, or after compression). That keeps the prompt byte-identical for prefix caching.

Every write that changed a file is recorded, with who caused it, as one JSON line in
`.audit.jsonl` beside that file: `{at, action, file, principal, origin?, entry}` (`principal` is
the `<platform>:<user id>` of the turn, `operator` when none was given; `origin` names a run
that is not the user's turn, such as `review`; `entry` the entry's first 200 characters).
The log lives with the file it describes, so a user's `USER.md` log stays in that user's
folder.

The methods do blocking file I/O: call them from a worker thread (`asyncio.to_thread`) when on
an event loop. None of them raise for bad input or I/O errors; they return a `MemoryResult`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent_core.threats import ThreatScope, screen
from hermes_common.atomic import atomic_write

try:  # POSIX advisory locks; elsewhere the in-process lock still serialises writers.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]  # the module or None: checked before each use

__all__ = [
    "AUDIT_FILE",
    "ENTRY_DELIMITER",
    "MEMORY_CHAR_LIMIT",
    "USER_CHAR_LIMIT",
    "MemoryResult",
    "MemoryStore",
    "MemoryTarget",
]

MemoryTarget = Literal["memory", "user"]

ENTRY_DELIMITER = "\n§\n"
AUDIT_FILE = ".audit.jsonl"
_AUDIT_ENTRY_CHARS = 200
MEMORY_CHAR_LIMIT = 2_200
USER_CHAR_LIMIT = 1_375

_FILES: dict[MemoryTarget, str] = {"memory": "MEMORY.md", "user": "USER.md"}
_HEADINGS: dict[MemoryTarget, str] = {
    "memory": "Your notes",
    "user": "About the user",
}
_PATH_LOCKS: dict[Path, threading.Lock] = {}
_PATH_LOCKS_GUARD = threading.Lock()


@dataclass(frozen=True, slots=True)
class _Audit:
    """What one write records: the action, the entry, who caused it and through what."""

    action: str
    entry: str
    principal: str | None
    origin: str | None


@dataclass(frozen=True, slots=True)
class MemoryResult:
    """Outcome of one memory operation. `entries` is filled only when the caller needs to see
    the current entries to fix its request (no match, ambiguous match)."""

    ok: bool
    message: str
    target: MemoryTarget
    chars: int
    limit: int
    entry_count: int
    entries: tuple[str, ...] = ()

    @property
    def usage(self) -> str:
        return f"{self.chars:,}/{self.limit:,} chars"


def _parse(raw: str) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for part in raw.replace("\r\n", "\n").split(ENTRY_DELIMITER):
        entry = part.strip()
        if entry and entry not in seen:
            seen.add(entry)
            out.append(entry)
    return out


def _size(entries: list[str]) -> int:
    return len(ENTRY_DELIMITER.join(entries))


def _path_lock(path: Path) -> threading.Lock:
    with _PATH_LOCKS_GUARD:
        return _PATH_LOCKS.setdefault(path, threading.Lock())


class MemoryStore:
    """MEMORY.md in `memory_dir`, USER.md in `user_dir` (default: `memory_dir`); folders are
    created on first write."""

    def __init__(
        self,
        memory_dir: Path,
        *,
        user_dir: Path | None = None,
        memory_limit: int = MEMORY_CHAR_LIMIT,
        user_limit: int = USER_CHAR_LIMIT,
        scope: ThreatScope = "strict",
    ) -> None:
        self._dirs: dict[MemoryTarget, Path] = {
            "memory": Path(memory_dir),
            "user": Path(user_dir) if user_dir is not None else Path(memory_dir),
        }
        self._limits: dict[MemoryTarget, int] = {"memory": memory_limit, "user": user_limit}
        self._scope: ThreatScope = scope
        self._snapshot: str | None = None

    # -- reading -------------------------------------------------------------------------

    def path(self, target: MemoryTarget) -> Path:
        return self._dirs[target] / _FILES[target]

    def limit(self, target: MemoryTarget) -> int:
        return self._limits[target]

    def entries(self, target: MemoryTarget) -> list[str]:
        """Current entries on disk (empty when the file is missing or unreadable)."""
        try:
            return _parse(self.path(target).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return []

    def render(self, targets: tuple[MemoryTarget, ...] = ("memory", "user")) -> str:
        """The prompt block for what is on disk now (empty string when the files are empty);
        only the files of `targets`.

        Every entry is threat-scanned whole; one that fails (e.g. edited into the file by hand,
        or too large to scan) is replaced by a `[BLOCKED: ...]` line in the rendered text only
        and logged; the file is left alone. Blocking file I/O and CPU work.
        """
        blocks: list[str] = []
        for target in targets:
            entries = self.entries(target)
            if not entries:
                continue
            shown = [self._render_entry(target, e) for e in entries]
            size, limit = _size(entries), self._limits[target]
            header = (
                f"## {_HEADINGS[target]} ({_FILES[target]}, "
                f"{min(100, size * 100 // limit)}% of {limit:,} chars)"
            )
            blocks.append(header + "\n" + ENTRY_DELIMITER.join(shown))
        if not blocks:
            return ""
        return "# Memory\n\n" + "\n\n".join(blocks)

    def _render_entry(self, target: MemoryTarget, entry: str) -> str:
        finding = screen(
            entry, source=f"{_FILES[target]} entry", kind="memory", scope=self._scope
        ).finding
        if finding is None:
            return entry
        return (
            f"[BLOCKED: a {_FILES[target]} entry was left out of the prompt because it "
            f"{finding.reason} ({finding.pattern_id}); remove it with the memory tool]"
        )

    def snapshot(self, targets: tuple[MemoryTarget, ...] = ("memory", "user")) -> str:
        """The frozen prompt block: rendered (for `targets`) on the first call, unchanged by
        later writes."""
        if self._snapshot is None:
            self._snapshot = self.render(targets)
        return self._snapshot

    def refresh_snapshot(self) -> str:
        """Re-read the files and freeze a new snapshot (new session, or after compression)."""
        self._snapshot = self.render()
        return self._snapshot

    # -- writing -------------------------------------------------------------------------

    def history(self, target: MemoryTarget) -> list[dict[str, str]]:
        """The audit lines of `target`'s file (oldest first; unreadable lines skipped)."""
        out: list[dict[str, str]] = []
        try:
            raw = (self._dirs[target] / AUDIT_FILE).read_text(encoding="utf-8")
        except OSError:
            return out
        for line in raw.splitlines():
            with contextlib.suppress(ValueError):
                item = json.loads(line)
                if isinstance(item, dict) and item.get("file") == _FILES[target]:
                    out.append({str(k): str(v) for k, v in item.items()})
        return out

    def add(self, target: MemoryTarget, content: str, *, principal: str | None = None,
            origin: str | None = None) -> MemoryResult:
        """Append an entry. Refused when empty, unsafe or over the target's limit.
        `principal` (and `origin`) are recorded with the write (see the module docstring)."""
        content = content.strip()
        refusal = self._check_content(target, content)
        if refusal:
            return refusal
        with self._locked(target):
            entries = self.entries(target)
            if content in entries:
                return self._result(target, entries, True, "Entry already exists; nothing added.")
            new = [*entries, content]
            over = self._over_limit(target, entries, new, f"adding this entry ({len(content):,} chars)")
            return over or self._write(target, new, "Entry added.",
                                       _Audit("add", content, principal, origin))

    def replace(self, target: MemoryTarget, old_text: str, content: str, *,
                principal: str | None = None, origin: str | None = None) -> MemoryResult:
        """Replace the single entry containing `old_text` with `content`."""
        content = content.strip()
        refusal = self._check_content(target, content)
        if refusal:
            return refusal
        with self._locked(target):
            entries = self.entries(target)
            index = self._find(target, entries, old_text)
            if isinstance(index, MemoryResult):
                return index
            new = list(entries)
            new[index] = content
            new = _parse(ENTRY_DELIMITER.join(new))
            over = self._over_limit(target, entries, new, "this replacement")
            return over or self._write(target, new, "Entry replaced.",
                                       _Audit("replace", content, principal, origin))

    def remove(self, target: MemoryTarget, old_text: str, *, principal: str | None = None,
               origin: str | None = None) -> MemoryResult:
        """Remove the single entry containing `old_text`."""
        with self._locked(target):
            entries = self.entries(target)
            index = self._find(target, entries, old_text)
            if isinstance(index, MemoryResult):
                return index
            new = entries[:index] + entries[index + 1 :]
            return self._write(target, new, "Entry removed.",
                               _Audit("remove", entries[index], principal, origin))

    # -- helpers -------------------------------------------------------------------------

    def _result(
        self,
        target: MemoryTarget,
        entries: list[str],
        ok: bool,
        message: str,
        *,
        show: bool = False,
    ) -> MemoryResult:
        return MemoryResult(
            ok=ok,
            message=message,
            target=target,
            chars=_size(entries),
            limit=self._limits[target],
            entry_count=len(entries),
            entries=tuple(entries) if show else (),
        )

    def _check_content(self, target: MemoryTarget, content: str) -> MemoryResult | None:
        if not content:
            return self._result(target, self.entries(target), False, "Content cannot be empty.")
        if "\n§\n" in f"\n{content}\n":
            return self._result(
                target, self.entries(target), False,
                "Content cannot contain a line holding only '§' (it separates entries).",
            )
        finding = screen(
            content, source=f"{_FILES[target]} entry", kind="memory_write", scope=self._scope
        ).finding
        if finding:
            return self._result(
                target,
                self.entries(target),
                False,
                f"Refused: memory is injected into the system prompt and this text "
                f"{finding.reason} (pattern {finding.pattern_id}). Nothing was written.",
            )
        return None

    def _find(self, target: MemoryTarget, entries: list[str], old_text: str) -> int | MemoryResult:
        needle = old_text.strip()
        if not needle:
            return self._result(
                target, entries, False, "old_text is required to pick the entry.", show=True
            )
        hits = [i for i, e in enumerate(entries) if needle in e]
        if not hits:
            return self._result(
                target, entries, False, f"No {_FILES[target]} entry contains {needle!r}.", show=True
            )
        if len(hits) > 1:
            return self._result(
                target,
                entries,
                False,
                f"{len(hits)} entries contain {needle!r}; quote more of the one you mean.",
                show=True,
            )
        return hits[0]

    def _over_limit(
        self, target: MemoryTarget, old: list[str], new: list[str], what: str
    ) -> MemoryResult | None:
        limit, after = self._limits[target], _size(new)
        if after <= limit:
            return None
        return self._result(
            target,
            old,
            False,
            f"Refused: {_FILES[target]} is at {_size(old):,}/{limit:,} chars and {what} would "
            f"bring it to {after:,}, over its {limit:,}-character limit. Shorten or remove "
            f"entries first (replace/remove), then retry.",
            show=True,
        )

    def _write(self, target: MemoryTarget, entries: list[str], message: str,
               audit: _Audit) -> MemoryResult:
        path = self.path(target)
        text = ENTRY_DELIMITER.join(entries) + ("\n" if entries else "")
        try:
            _atomic_write(path, text)
        except OSError as exc:
            return self._result(
                target,
                self.entries(target),
                False,
                f"Failed to write {_FILES[target]}: {exc.strerror or type(exc).__name__}.",
            )
        self._record(target, audit)
        return self._result(target, entries, True, message)

    def _record(self, target: MemoryTarget, audit: _Audit) -> None:
        """Append the write's audit line (under the target's lock). A log that cannot be
        written does not undo the write."""
        line: dict[str, str] = {
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "action": audit.action, "file": _FILES[target],
            "principal": audit.principal or "operator"}
        if audit.origin:
            line["origin"] = audit.origin
        line["entry"] = audit.entry[:_AUDIT_ENTRY_CHARS]
        with contextlib.suppress(OSError), open(
                self._dirs[target] / AUDIT_FILE, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")

    @contextlib.contextmanager
    def _locked(self, target: MemoryTarget) -> Iterator[None]:
        path = self.path(target)
        with _path_lock(path.absolute()):
            if fcntl is None:
                yield
                return
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
            except OSError:
                yield
                return
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)


def _atomic_write(path: Path, text: str) -> None:
    """Write `text` (UTF-8, newlines as given) to `path` whole; raises OSError, and the temp
    file never survives a failure."""
    atomic_write(path, text.encode("utf-8"), prefix=".mem_")
