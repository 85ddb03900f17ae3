"""Importing libraries without the parts we never use, when those parts cost start-up time.

structlog imports `rich` (and with it pygments and rich's traceback machinery, about a tenth
of a second and 50 modules) at import time whenever rich is installed, only to offer pretty
console tracebacks. Our logging renders tracebacks plainly (`gateway.logging` passes
`structlog.dev.plain_traceback`), and rich is only installed because the CLI's table
commands use it. `hide_rich_from_structlog()` arranges that structlog, whenever it is first
imported, is imported with `rich` hidden, so it takes its no-rich path; rich itself stays
importable for the CLI. Nothing is imported until then (the quick CLI commands import
neither). `greenlet` is hidden the same way: structlog imports it when installed (playwright,
a test dependency, brings it; so do gevent and SQLAlchemy) for its deprecated thread-local
context, which we never use; it maps the C++ runtime into the process (~1.5 MB of RSS).

`pause_collector()` / `resume_collector()`: the `hermes` entry point runs its imports with
the cyclic collector paused (see there).
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = [
    "hide_rich_from_structlog",
    "pause_collector",
    "resume_collector",
    "skip_pydantic_plugin_scan",
]


#: Optional imports of structlog that fail (ImportError) while structlog itself is imported.
HIDDEN_FROM_STRUCTLOG = ("rich", "greenlet")


class _HidingLoader:
    """Runs structlog's own loader with `import rich` (and the rest of
    `HIDDEN_FROM_STRUCTLOG`) failing meanwhile; a name already imported is left alone."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._inner.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        hidden = [name for name in HIDDEN_FROM_STRUCTLOG if name not in sys.modules]
        for name in hidden:
            sys.modules[name] = None  # type: ignore[assignment]  # None: `import name` fails
        try:
            self._inner.exec_module(module)
        finally:
            for name in hidden:
                if sys.modules.get(name, "") is None:
                    del sys.modules[name]


class _StructlogFinder:
    """A one-shot meta path finder for the top-level `structlog` package."""

    def find_spec(self, name: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name != "structlog":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("structlog")
        if spec is not None and spec.loader is not None:
            spec.loader = _HidingLoader(spec.loader)  # type: ignore[assignment]  # a Loader by duck typing
        return spec


def hide_rich_from_structlog() -> None:
    """Install the finder once (it hides all of `HIDDEN_FROM_STRUCTLOG`); a no-op when
    structlog, or everything it would hide, is loaded already."""
    if "structlog" in sys.modules or all(n in sys.modules for n in HIDDEN_FROM_STRUCTLOG):
        return
    if not any(isinstance(f, _StructlogFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _StructlogFinder())


def skip_pydantic_plugin_scan() -> None:
    """pydantic looks for plugins (entry points of every installed distribution: ~16 ms on
    a slow host, at the first model it builds) unless `PYDANTIC_DISABLE_PLUGINS` says not
    to; we use none. A deployment that does (an observability plugin) sets the variable
    itself, to the empty string for all of them: it is only defaulted here."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


_paused = False


def pause_collector() -> None:
    """Pause the cyclic garbage collector for start-up (the `hermes` entry point, and the
    imports of `hermes gateway run`). Importing what a gateway runs leaves about 70,000
    long-lived objects (modules, classes, type tables) and next to no garbage, yet the
    collector walked them 180 times on the way (164 young, 15 middle and 1 full
    collection): about 100 ms, an eighth of the import time on a slow host. A no-op when
    the collector is off already (a caller that turned it off keeps it off)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collector() -> None:
    """Undo `pause_collector()` (and only that: a collector someone else turned off stays
    off). Idempotent. The first collection after it finds whatever garbage start-up left."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()
