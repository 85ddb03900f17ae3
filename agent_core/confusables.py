"""The confusables table of `threat_text.fold`: a folded non-ASCII character → its Unicode
TR39 prototype, or None for a combining mark (dropped).

It comes from the Unicode confusables data shipped in the `confusable-homoglyphs` package (its
`confusables.json`). That data lists each pair in both directions, so the prototype is
recovered as the ASCII letter or digit a character is confusable with, or else one canonical
member of its confusable group.

Building it parses the whole data file: about 0.1 s of CPU and ~3 MB of heap that stays with
the process, in every gateway start (the threat rules are compiled once it is ready). With a
cache directory (`use_cache_dir`, the profile's `cache/`), the table built once is kept there as
a small JSON file named after what it was built from (the data file's size and modification
time, the Unicode database's version, `TABLE_FORMAT`), and later starts read that (a few ms);
a file that is missing, unreadable, or from other sources is built again and rewritten. A cache
that cannot be written costs only the rebuild.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path

from hermes_common.atomic import atomic_write

__all__ = ["TABLE_FORMAT", "build", "cache_name", "data_file", "table", "use_cache_dir"]

#: Bumped whenever `build` changes what it produces: older cache files are then ignored.
TABLE_FORMAT = 1

_cache_dir: list[Path] = []


def use_cache_dir(path: Path | None) -> None:
    """Keep (and look for) the built table in `path`; None: build it in memory only. Takes
    effect for the first `table()` call after it."""
    _cache_dir[:] = [path] if path is not None else []


def data_file() -> Path:
    """The `confusables.json` of the installed `confusable-homoglyphs` (not imported)."""
    spec = importlib.util.find_spec("confusable_homoglyphs")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("confusable_homoglyphs")
    return Path(next(iter(spec.submodule_search_locations))) / "confusables.json"


def cache_name(source: Path) -> str:
    """The cache file's name for a table built from `source` by this code."""
    st = source.stat()
    key = f"{TABLE_FORMAT}:{st.st_size}:{st.st_mtime_ns}:{unicodedata.unidata_version}"
    return f"fold-table-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


@functools.cache
def table() -> dict[int, str | None]:
    """The table: from the cache directory when it holds one built from the same sources,
    else built (and stored there). Built once per process."""
    source = data_file()
    if not _cache_dir:
        return build(source)
    path = _cache_dir[0] / cache_name(source)
    cached = _load(path)
    if cached is not None:
        return cached
    built = build(source)
    _store(path, built)
    return built


def _load(path: Path) -> dict[int, str | None] | None:
    try:
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or not raw:
        return None
    out: dict[int, str | None] = {}
    try:
        for key, value in raw.items():
            if value is not None and not isinstance(value, str):
                return None
            out[int(key)] = value
    except ValueError:
        return None
    return out


def _store(path: Path, built: dict[int, str | None]) -> None:
    """Write atomically (a reader never sees half a file); a failure is only a lost cache."""
    data = json.dumps({str(k): v for k, v in built.items()}, ensure_ascii=True,
                      separators=(",", ":")).encode()
    with contextlib.suppress(OSError):
        atomic_write(path, data, prefix=".fold-table-")


_KEEP = frozenset(range(0x1100, 0x1200)) | frozenset(range(0x3130, 0x3190))  # Hangul jamo
_LRM = str.maketrans("", "", "\u200e\u200f")


def _base(ch: str) -> str:
    """`ch` decomposed, case-folded and stripped of combining marks."""
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", ch).casefold())
    return "".join(c for c in text if unicodedata.category(c) not in ("Mn", "Me"))


def _confusable_pairs(source: Path) -> Iterator[tuple[str, str]]:
    data: dict[str, list[dict[str, str]]] = json.loads(source.read_text(encoding="utf-8"))
    for key, entries in data.items():
        for entry in entries:
            yield key.translate(_LRM), entry["c"].translate(_LRM)


def _prototypes(source: Path) -> dict[str, str]:
    """Folded non-ASCII character → its prototype (ASCII letters/digits, or a group member)."""
    ascii_of: dict[str, str] = {}
    parent: dict[str, str] = {}

    def root(c: str) -> str:
        while parent.get(c, c) != c:
            c = parent[c]
        return c

    for left, right in _confusable_pairs(source):
        (orig, a), (_, b) = sorted(((left, _base(left)), (right, _base(right))), key=_foldable)
        if not _is_mapped(a) or a == b:
            continue
        if b.isascii():
            if b.isalnum() and (a == orig or a not in ascii_of):
                ascii_of[a] = "m" if b == "rn" else b
        elif _is_mapped(b):
            ra, rb = root(a), root(b)
            if ra != rb:
                parent[max(ra, rb, key=_rank)] = min(ra, rb, key=_rank)
    group_ascii: dict[str, str] = {}
    for c, proto in ascii_of.items():
        group_ascii.setdefault(root(c), proto)
    mapping = {c: ascii_of.get(c) or group_ascii.get(root(c)) or root(c) for c in parent}
    mapping.update(ascii_of)
    return {c: p for c, p in mapping.items() if c != p}


def _is_mapped(c: str) -> bool:
    return len(c) == 1 and not c.isascii() and ord(c) not in _KEEP


def _foldable(pair: tuple[str, str]) -> bool:
    return not _is_mapped(pair[1])


def _rank(c: str) -> tuple[bool, int]:
    return (not c.isalpha(), ord(c))


def build(source: Path) -> dict[int, str | None]:
    """The table from the confusables data in `source` (about 0.1 s of CPU)."""
    out: dict[int, str | None] = {ord(c): p for c, p in _prototypes(source).items()}
    for cp in range(0x300, 0x20000):
        if unicodedata.category(chr(cp)) in ("Mn", "Me"):
            out[cp] = None
    return out
