"""Start-up: the compiled methods of dataclasses, kept between starts.

`dataclasses` writes each class's methods (`__init__`, `__repr__`, `__eq__`, a frozen
class's `__setattr__` and `__delattr__`, `__hash__`) as source text and compiles it with
`exec` while the class statement runs. A ready gateway has built about a thousand of them,
and compiling them was the largest single cost of its imports (~80 ms of a ~400 ms start on
a fast host; the bytecode cache of the modules themselves does not cover them).

`DataclassCode` shadows the name `exec` inside the `dataclasses` module only (a module
global, which Python looks up before the builtin): given a source text it has compiled
before, it runs the kept code object instead of compiling the text again. The whole text is
the key (as its 128-bit BLAKE2b digest), so a class whose fields or options change gets its
own entry; compiling uses the flags `exec` itself would use (no `__future__` flags
inherited from here), so the code run is the code `dataclasses` would have run. Anything
but a source string goes to the real `exec` untouched.

The codes used by a start are kept in one file of the profile's cache directory, named
after the interpreter's bytecode format (`dataclass-code-<tag>.marshal`); a start that
compiled anything new, or no longer used some kept entry, rewrites it (atomically) with
exactly what it used. A missing, damaged or foreign file means compiling as usual; a cache
that cannot be written costs only the next start's compiling. The file holds code that is
run, so it lives with the rest of the profile (a folder only its owner can write), like
`__pycache__` does for the modules.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import marshal
import sys
import threading
from pathlib import Path
from types import CodeType
from typing import Any

from hermes_common.atomic import atomic_write

__all__ = [
    "DataclassCode",
    "active",
    "file_name",
    "finish_dataclass_code",
    "use_dataclass_code",
]

#: Bumped whenever what is kept changes shape: older files are then ignored.
FORMAT = 2
_REAL_EXEC = exec


def file_name() -> str:
    """The cache file's name for this interpreter's bytecode (another Python ignores it)."""
    return f"dataclass-code-{sys.implementation.cache_tag}.marshal"


def _tag() -> tuple[int, bytes, int]:
    return (FORMAT, importlib.util.MAGIC_NUMBER, marshal.version)


class DataclassCode:
    """The kept codes of one cache file, and what this process used and compiled."""

    def __init__(self, path: Path, kept: dict[bytes, CodeType] | None = None) -> None:
        self.path = path
        self._kept = kept or {}
        self._used: dict[bytes, CodeType] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.compiled = 0

    @classmethod
    def load(cls, path: Path) -> DataclassCode:
        """The file's codes; none when it is missing, unreadable, damaged or foreign."""
        return cls(path, _read(path))

    def exec(self, source: Any, globals: Any = None, locals: Any = None, /) -> None:
        """What `dataclasses` calls as `exec(text, globals, namespace)`."""
        if not isinstance(source, str):
            _REAL_EXEC(source, globals, locals)
            return
        key = _key(source)
        code = self._kept.get(key) or self._used.get(key)
        if code is None:
            # exec(str) compiles with the flags of its caller, `dataclasses`, which has
            # none: do not let this module's `from __future__ import annotations` leak in.
            code = compile(source, "<string>", "exec", dont_inherit=True)
            with self._lock:
                self.compiled += 1
                self._used[key] = code
        else:
            with self._lock:
                self.hits += 1
                self._used[key] = code
        _REAL_EXEC(code, globals, locals)

    def stale(self) -> bool:
        """True when the file should be rewritten: a code was compiled, or one kept is
        no longer used."""
        return self.compiled > 0 or len(self._used) != len(self._kept)

    def save(self) -> bool:
        """Write exactly the codes used by this process, when anything changed, into the
        existing cache folder. False when nothing was written (nothing changed, or the
        folder is missing or cannot be written)."""
        with self._lock:
            if not self.stale() or not self.path.parent.is_dir():
                return False  # (a profile that was never set up gets no folder from this)
            used = dict(self._used)
        try:
            atomic_write(self.path, marshal.dumps((_tag(), used)), prefix=".dataclass-code-")
        except (OSError, ValueError):
            return False
        return True


def _key(source: str) -> bytes:
    """A text's key: its 128-bit BLAKE2b digest (the texts themselves would be held in
    memory until the file is written, and make it three times larger)."""
    return hashlib.blake2b(source.encode(), digest_size=16).digest()


def _read(path: Path) -> dict[bytes, CodeType]:
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    try:
        tag, kept = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return {}
    if tag != _tag() or not isinstance(kept, dict):
        return {}
    if not all(isinstance(k, bytes) and isinstance(v, CodeType) for k, v in kept.items()):
        return {}
    return kept


_active: DataclassCode | None = None


def active() -> DataclassCode | None:
    """The installed cache, if any."""
    return _active


def use_dataclass_code(cache_dir: Path) -> DataclassCode:
    """Install the kept codes of `cache_dir` for the dataclasses created from now on (until
    `finish_dataclass_code()`). Installing again replaces the first."""
    global _active
    _active = DataclassCode.load(cache_dir / file_name())
    dataclasses.exec = _active.exec  # type: ignore[attr-defined]  # shadows the builtin there
    return _active


def finish_dataclass_code() -> DataclassCode | None:
    """Uninstall (dataclasses compile as usual again), write the file if anything changed,
    let go of the codes. Blocking (a file write): call it off the event loop. Idempotent;
    None when nothing was installed."""
    global _active
    cache, _active = _active, None
    if cache is None:
        return None
    if getattr(dataclasses, "exec", None) == cache.exec:
        del dataclasses.exec  # type: ignore[attr-defined]  # the builtin again
    cache.save()
    cache._kept = {}
    cache._used = {}
    return cache
