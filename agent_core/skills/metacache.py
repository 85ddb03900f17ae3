"""What each SKILL.md's frontmatter says, cached by file identity (inode, mtime, size).

Parsing YAML is most of the cost of listing skills (~0.1 ms a file), so a parsed SKILL.md is
kept in memory (bounded) and, for the next process, in `<root>/.meta_snapshot.json`. An entry
is used only while the file's inode, mtime (ns) and size are unchanged (writes go through
`os.replace`, a new inode), so any edit is parsed again. The snapshot holds only metadata
already validated; the index built from it is threat-scanned like any other.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections import OrderedDict
from pathlib import Path

from agent_core.skills.format import FormatError, SkillMeta, parse_skill
from hermes_common.atomic import atomic_write

__all__ = ["SNAPSHOT_FILE", "MetaCache", "read_meta", "save_snapshot"]

SNAPSHOT_FILE = ".meta_snapshot.json"
_VERSION = 1
_MAX_ENTRIES = 8192

Identity = tuple[int, int, int]
Cached = tuple[SkillMeta | None, str]


def _to_json(meta: SkillMeta | None, error: str) -> dict[str, object]:
    if meta is None:
        return {"error": error}
    return {"name": meta.name, "description": meta.description, "tags": list(meta.tags),
            "platforms": list(meta.platforms), "required_tools": list(meta.required_tools)}


def _from_json(data: dict[str, object]) -> Cached | None:
    try:
        if "error" in data:
            return None, str(data["error"])
        return SkillMeta(name=str(data["name"]), description=str(data["description"]),
                         tags=tuple(map(str, data["tags"])),  # type: ignore[call-overload]  # json list
                         platforms=tuple(map(str, data["platforms"])),  # type: ignore[call-overload]  # json list
                         required_tools=tuple(map(str, data["required_tools"])),  # type: ignore[call-overload]  # json list
                         ), ""
    except (KeyError, TypeError, ValueError):
        return None


class MetaCache:
    """Parsed frontmatter by path and identity; thread-safe."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, tuple[Identity, Cached]] = OrderedDict()
        self._lock = threading.Lock()
        self._loaded: set[str] = set()
        self._dirty: set[str] = set()

    def _load_snapshot(self, root: Path) -> None:
        key = str(root)
        if key in self._loaded:
            return
        self._loaded.add(key)
        with contextlib.suppress(OSError, ValueError):
            data = json.loads((root / SNAPSHOT_FILE).read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("version") != _VERSION:
                return
            for rel, item in dict(data.get("entries") or {}).items():
                ident, raw = item
                cached = _from_json(raw) if isinstance(raw, dict) else None
                if cached is not None and isinstance(ident, list) and len(ident) == 3:
                    self._items[str(root / rel)] = ((int(ident[0]), int(ident[1]),
                                                     int(ident[2])), cached)

    def get(self, root: Path, path: str) -> Cached:
        """The metadata of `path` (a SKILL.md under `root`), parsed only when changed."""
        try:
            st = os.stat(path)
        except OSError as exc:
            return None, f"cannot read {os.path.basename(path)} ({type(exc).__name__})"
        ident = (st.st_ino, st.st_mtime_ns, st.st_size)
        key = path
        with self._lock:
            self._load_snapshot(root)
            hit = self._items.get(key)
            if hit is not None and hit[0] == ident:
                self._items.move_to_end(key)
                return hit[1]
        cached = _parse(path)
        with self._lock:
            self._items[key] = (ident, cached)
            self._dirty.add(str(root))
            while len(self._items) > _MAX_ENTRIES:
                self._items.popitem(last=False)
        return cached

    def save(self, root: Path) -> None:
        """Write the snapshot of `root` if something was parsed since. Must not raise."""
        key = str(root)
        with self._lock:
            if key not in self._dirty:
                return
            self._dirty.discard(key)
            prefix = key + os.sep
            entries = {k[len(prefix):]: [list(ident), _to_json(*cached)]
                       for k, (ident, cached) in self._items.items() if k.startswith(prefix)}
        with contextlib.suppress(OSError):
            atomic_write(root / SNAPSHOT_FILE, json.dumps(
                {"version": _VERSION, "entries": entries}, ensure_ascii=False).encode(),
                prefix=".skill_")


def _parse(path: str) -> Cached:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        meta, _ = parse_skill(text, require_body=False)
    except (OSError, FormatError) as exc:
        return None, str(exc)
    return meta, ""


_CACHE = MetaCache()


def read_meta(root: Path, skill_md: str) -> Cached:
    """The process-wide cache's answer for `skill_md`."""
    return _CACHE.get(root, skill_md)


def save_snapshot(root: Path) -> None:
    _CACHE.save(root)
