"""Skills on disk: `<root>/<category>/<name>/SKILL.md` (or `<root>/<name>/SKILL.md`), with the
skill's resource files beside it.

Every write is validated (names, frontmatter), scanned by the same threat scan as memory
(`agent_core.threats.screen_skill`), written atomically (temp file + `os.replace`), confined to
the skill's own folder (no absolute paths, no `..`, no symlinks out) and recorded with the
principal that caused it (and the `origin`, when a run other than the user's turn wrote it) in
`<root>/.audit.jsonl` (one JSON line per write). Blocking file I/O:
call from a worker thread.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import structlog

from agent_core.skills.format import (
    MAX_SKILL_CHARS,
    FormatError,
    SkillMeta,
    parse_skill,
    valid_name,
)
from agent_core.skills.metacache import read_meta, save_snapshot
from agent_core.threats import screen_skill
from hermes_common.atomic import atomic_write as _atomic_write

__all__ = [
    "AUDIT_FILE",
    "MAX_RESOURCE_BYTES",
    "MAX_VIEW_CHARS",
    "SKILL_FILE",
    "SkillEntry",
    "SkillError",
    "SkillStore",
]

log = structlog.get_logger("agent_core.skills")

SKILL_FILE = "SKILL.md"
AUDIT_FILE = ".audit.jsonl"
#: Largest resource file written or read (bytes).
MAX_RESOURCE_BYTES = 1 << 20
#: Most characters `view` returns (longer text is cut with a note).
MAX_VIEW_CHARS = 40_000
_MAX_RESOURCES_LISTED = 50
_SKIP_DIRS = frozenset({".git", ".hub", ".archive", "__pycache__", "node_modules", ".venv"})
_LOCKS: dict[Path, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


class SkillError(Exception):
    """An expected failure the model should read (unknown skill, bad path, refused text)."""


@dataclass(frozen=True, slots=True)
class SkillEntry:
    """One skill folder found on disk (`meta` None when its SKILL.md is broken)."""

    name: str
    category: str | None
    path: Path
    meta: SkillMeta | None
    error: str = ""

    @property
    def qualified(self) -> str:
        return f"{self.category}/{self.name}" if self.category else self.name


def _lock(root: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(root, threading.Lock())


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temp file in the same folder and `os.replace`."""
    _atomic_write(path, data, prefix=".skill_")


class SkillStore:
    """The skills folder of one profile."""

    def __init__(self, root: Path, *, origin: str | None = None) -> None:
        """`origin` is recorded with every write of this store when set (e.g. "review":
        the background self-review wrote it for the principal's turn)."""
        self.root = root
        self.origin = origin

    # -- reading ---------------------------------------------------------------------------

    def _folder_paths(self) -> list[tuple[str | None, str, str]]:
        """(category, name, folder path as text) of every skill folder, sorted."""
        out: list[tuple[str | None, str, str]] = []
        try:
            top = sorted(os.scandir(self.root), key=lambda e: e.name)
        except OSError:
            return out
        join, isfile = os.path.join, os.path.isfile
        for entry in top:
            if entry.name.startswith(".") or entry.name in _SKIP_DIRS or not entry.is_dir():
                continue
            if isfile(join(entry.path, SKILL_FILE)):
                out.append((None, entry.name, entry.path))
                continue
            try:
                inner = sorted(os.scandir(entry.path), key=lambda e: e.name)
            except OSError:
                continue
            out.extend((entry.name, sub.name, sub.path) for sub in inner
                       if not sub.name.startswith(".") and sub.is_dir()
                       and isfile(join(sub.path, SKILL_FILE)))
        return out

    def folders(self) -> list[tuple[str | None, str, Path]]:
        """(category, name, folder) of every skill folder, sorted; reads no SKILL.md."""
        return [(c, n, Path(p)) for c, n, p in self._folder_paths()]

    def signature(self) -> tuple[object, ...]:
        """(category, name, mtime_ns, size) of every SKILL.md: changes when any does."""
        out: list[object] = []
        for category, name, path in self._folder_paths():
            try:
                st = os.stat(os.path.join(path, SKILL_FILE))
            except OSError:
                continue
            out.append((category, name, st.st_ino, st.st_mtime_ns, st.st_size))
        return tuple(out)

    def scan(self) -> list[SkillEntry]:
        """Every skill with its metadata, sorted by (category, name)."""
        out = []
        for category, name, path in self._folder_paths():
            meta, error = read_meta(self.root, os.path.join(path, SKILL_FILE))
            out.append(SkillEntry(name, category, Path(path), meta, error))
        save_snapshot(self.root)
        return out

    def find(self, name: str) -> SkillEntry:
        """The skill called `name` (`name`, `category/name` or its frontmatter name)."""
        wanted = name.strip().strip("/")
        hits = [e for e in self.scan()
                if wanted in (e.name, e.qualified) or (e.meta is not None and e.meta.name == wanted)]
        if not hits:
            known = ", ".join(e.qualified for e in self.scan()[:20]) or "none"
            raise SkillError(f"No skill named {name!r}. Known skills: {known}.")
        if len(hits) > 1:
            raise SkillError(f"{name!r} is ambiguous: "
                             f"{', '.join(e.qualified for e in hits)}; use category/name.")
        return hits[0]

    def resources(self, entry: SkillEntry) -> list[str]:
        """Relative paths of the files beside SKILL.md (at most 50)."""
        out: list[str] = []
        for dirpath, dirnames, filenames in os.walk(entry.path):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")
                                 and d not in _SKIP_DIRS)
            for fname in sorted(filenames):
                rel = Path(dirpath, fname).relative_to(entry.path).as_posix()
                if rel != SKILL_FILE and not fname.startswith("."):
                    out.append(rel)
                    if len(out) >= _MAX_RESOURCES_LISTED:
                        return out
        return out

    def resolve(self, entry: SkillEntry, file_path: str) -> Path:
        """`file_path` inside the skill's folder, or SkillError."""
        rel = PurePosixPath(file_path.replace("\\", "/"))
        if (not file_path.strip() or rel.is_absolute() or ".." in rel.parts
                or any(":" in p for p in rel.parts)):
            raise SkillError(f"file_path {file_path!r} must be a relative path inside the skill")
        target = (entry.path / rel).resolve()
        base = entry.path.resolve()
        if target != base and base not in target.parents:
            raise SkillError(f"file_path {file_path!r} leads outside the skill")
        return target

    def view(self, name: str, file_path: str | None = None) -> tuple[SkillEntry, str]:
        """The body of SKILL.md (or one resource file), scanned and cut to `MAX_VIEW_CHARS`."""
        entry = self.find(name)
        path = entry.path / SKILL_FILE if not file_path else self.resolve(entry, file_path)
        if not path.is_file():
            raise SkillError(f"{file_path!r} is not a file of skill {entry.qualified}; files: "
                             f"{', '.join(self.resources(entry)) or 'none'}")
        if path.stat().st_size > MAX_RESOURCE_BYTES:
            raise SkillError(f"{file_path or SKILL_FILE} is larger than "
                             f"{MAX_RESOURCE_BYTES:,} bytes")
        text = path.read_text(encoding="utf-8", errors="replace")
        screened = screen_skill(text, name=entry.qualified)
        if not screened.ok:
            raise SkillError(screened.note)
        if len(text) > MAX_VIEW_CHARS:
            text = (text[:MAX_VIEW_CHARS] + f"\n[... cut at {MAX_VIEW_CHARS:,} of "
                    f"{len(text):,} characters]")
        return entry, text

    # -- writing ---------------------------------------------------------------------------

    def _checked(self, text: str, label: str) -> bytes:
        screened = screen_skill(text, name=label)
        if not screened.ok:
            reason = screened.finding.reason if screened.finding else "was refused"
            pid = screened.finding.pattern_id if screened.finding else "?"
            raise SkillError(f"Refused: skills are loaded into the agent's context and this "
                             f"text {reason} (pattern {pid}). Nothing was written.")
        return text.encode("utf-8")

    def _skill_text(self, content: str, folder_name: str) -> bytes:
        try:
            meta, _ = parse_skill(content)
        except FormatError as exc:
            raise SkillError(f"Invalid SKILL.md: {exc}") from None
        if meta.name != folder_name:
            raise SkillError(f"frontmatter name {meta.name!r} must equal the skill's name "
                             f"{folder_name!r}")
        return self._checked(content, folder_name)

    def _audit(self, action: str, entry_name: str, principal: str | None,
               file_path: str | None = None) -> None:
        line = {"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "action": action,
                "skill": entry_name, "file": file_path or SKILL_FILE,
                "principal": principal or "operator"}
        if self.origin:
            line["origin"] = self.origin
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / AUDIT_FILE, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        log.info("skill_written", action=action, skill=entry_name, principal=line["principal"],
                 origin=self.origin)

    def history(self, name: str) -> list[dict[str, str]]:
        """The audit lines of skill `name` (oldest first)."""
        out = []
        with contextlib.suppress(OSError):
            for raw in (self.root / AUDIT_FILE).read_text(encoding="utf-8").splitlines():
                with contextlib.suppress(ValueError):
                    item = json.loads(raw)
                    if isinstance(item, dict) and item.get("skill") in (name,):
                        out.append({k: str(v) for k, v in item.items()})
        return out

    def create(self, name: str, content: str, *, category: str | None = None,
               principal: str | None = None) -> SkillEntry:
        if not valid_name(name):
            raise SkillError("name must be lower-case letters, digits, '.', '_' or '-' "
                             "(at most 64 characters)")
        if category is not None and not valid_name(category):
            raise SkillError("category must be one lower-case name like the skill's")
        data = self._skill_text(content, name)
        with _lock(self.root):
            if any(n == name for _, n, _ in self.folders()):
                raise SkillError(f"A skill named {name!r} exists; patch or edit it instead.")
            folder = self.root / category / name if category else self.root / name
            if folder.exists():
                raise SkillError(f"{folder.name!r} exists and is not a skill folder")
            atomic_write(folder / SKILL_FILE, data)
            self._audit("create", name, principal)
        return SkillEntry(name, category, folder, parse_skill(content)[0])

    def edit(self, name: str, content: str, *, principal: str | None = None) -> SkillEntry:
        entry = self.find(name)
        data = self._skill_text(content, entry.name)
        with _lock(self.root):
            atomic_write(entry.path / SKILL_FILE, data)
            self._audit("edit", entry.name, principal)
        return entry

    def patch(self, name: str, old: str, new: str, *, replace_all: bool = False,
              file_path: str | None = None, principal: str | None = None) -> int:
        """Replace `old` (unique unless `replace_all`) in SKILL.md or a resource; returns
        how many places changed."""
        entry = self.find(name)
        path = self.resolve(entry, file_path) if file_path else entry.path / SKILL_FILE
        if not old:
            raise SkillError("old_string is required")
        with _lock(self.root):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                raise SkillError(f"{file_path or SKILL_FILE} cannot be read as text") from None
            count = text.count(old)
            if count == 0:
                raise SkillError(f"old_string not found; the file starts: {text[:500]!r}")
            if count > 1 and not replace_all:
                raise SkillError(f"old_string occurs {count} times; give more context or "
                                 "set replace_all")
            updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
            if path.name == SKILL_FILE and path.parent == entry.path:
                data = self._skill_text(updated, entry.name)
            else:
                data = self._checked(updated, entry.qualified)
            atomic_write(path, data)
            self._audit("patch", entry.name, principal, file_path)
        return count if replace_all else 1

    def write_file(self, name: str, file_path: str, content: str, *,
                   principal: str | None = None) -> Path:
        entry = self.find(name)
        target = self.resolve(entry, file_path)
        if target == (entry.path / SKILL_FILE).resolve():
            raise SkillError("use action 'edit' or 'patch' to change SKILL.md")
        data = self._checked(content, entry.qualified)
        if len(data) > MAX_RESOURCE_BYTES:
            raise SkillError(f"a resource file may hold at most {MAX_RESOURCE_BYTES:,} bytes")
        with _lock(self.root):
            atomic_write(target, data)
            self._audit("write_file", entry.name, principal, file_path)
        return target

    def delete(self, name: str, *, principal: str | None = None) -> SkillEntry:
        entry = self.find(name)
        base = self.root.resolve()
        if entry.path.is_symlink() or base not in entry.path.resolve().parents:
            raise SkillError(f"{entry.qualified} is not inside the skills folder")
        with _lock(self.root):
            shutil.rmtree(entry.path)
            self._audit("delete", entry.name, principal)
        return entry

    def install(self, source: Path, *, category: str | None = None,
                principal: str | None = None) -> SkillEntry:
        """Copy a skill folder (holding SKILL.md) in, after validating and scanning every
        text file of it. Symlinks and oversized files are refused."""
        skill_md = source / SKILL_FILE
        try:
            content = skill_md.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            raise SkillError(f"{source} holds no readable {SKILL_FILE}") from None
        if len(content) > MAX_SKILL_CHARS:
            raise SkillError(f"{SKILL_FILE} is longer than {MAX_SKILL_CHARS:,} characters")
        try:
            meta, _ = parse_skill(content)
        except FormatError as exc:
            raise SkillError(f"Invalid SKILL.md: {exc}") from None
        files: list[tuple[str, bytes]] = []
        for path in sorted(source.rglob("*")):
            rel = path.relative_to(source).as_posix()
            if path.is_symlink():
                raise SkillError(f"{rel} is a symlink; skills may not hold links")
            if path.is_dir() or any(p in _SKIP_DIRS for p in path.relative_to(source).parts):
                continue
            if path.stat().st_size > MAX_RESOURCE_BYTES:
                raise SkillError(f"{rel} is larger than {MAX_RESOURCE_BYTES:,} bytes")
            raw = path.read_bytes()
            with contextlib.suppress(UnicodeDecodeError):
                self._checked(raw.decode("utf-8"), f"{meta.name}/{rel}")
            files.append((rel, raw))
        entry = self.create(meta.name, content, category=category, principal=principal)
        for rel, raw in files:
            if rel != SKILL_FILE:
                atomic_write(entry.path / rel, raw)
        return entry
