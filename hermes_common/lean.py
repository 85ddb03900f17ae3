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

`defer_aiohttp_ca()`: importing `aiohttp.connector` builds two TLS client contexts (the
verifying one and the one for `ssl=False`), and each parsed the system's CA bundle there and
then: about 19 ms of CPU and 1-3 MB apiece, a tenth of a gateway's start, paid even by a
gateway that never opens a TLS connection through aiohttp (the `api` adapter with a model on
plain `http://127.0.0.1`). That module now runs with the CA step of plain contexts
(`set_default_verify_paths`, which `create_default_context` ends with too) deferred: such a
context loads the bundle the first time it wraps a socket or a memory BIO (every connection
does; under a lock, once), or is asked for its certificates (`hermes_common.tls_context`).
Nothing else about the contexts changes (protocol, options, verification mode, hostname
check, ALPN), and they are still `ssl.SSLContext`s. The bundle is read after start-up, so a
`SSL_CERT_FILE` set by then (as `gateway.process.detect_ca_bundle` does where the system has
no bundle) is the one used; the first TLS connection pays the ~19 ms once.

Both go through `wrap_first_import(name, around)`: a one-shot meta path finder gives the
module, when it is first imported, its own loader run inside `around()`.

`pause_collector()` / `resume_collector()`: the `hermes` entry point runs its imports with
the cyclic collector paused (see there).
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = [
    "defer_aiohttp_ca",
    "hide_rich_from_structlog",
    "pause_collector",
    "resume_collector",
    "skip_pydantic_plugin_scan",
    "wrap_first_import",
]


#: Optional imports of structlog that fail (ImportError) while structlog itself is imported.
HIDDEN_FROM_STRUCTLOG = ("rich", "greenlet")


class WrappedLoader:
    """A module's own loader, run inside `around()` when the module executes."""

    def __init__(self, inner: Any, around: Callable[[], AbstractContextManager[object]]) -> None:
        self._inner = inner
        self._around = around

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._inner.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        with self._around():
            self._inner.exec_module(module)


class OneShotFinder:
    """A meta path finder that, the first time module `name` is imported, gives it a
    `WrappedLoader` running `around()`, and removes itself."""

    def __init__(self, name: str, around: Callable[[], AbstractContextManager[object]]) -> None:
        self.name = name
        self._around = around

    def find_spec(self, name: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = WrappedLoader(spec.loader, self._around)  # type: ignore[assignment]  # a Loader by duck typing
        return spec


def wrap_first_import(name: str, around: Callable[[], AbstractContextManager[object]]) -> None:
    """Run module `name` inside `around()` when it is first imported (once; a no-op when it
    is loaded already or the finder is in place)."""
    if name in sys.modules:
        return
    if not any(isinstance(f, OneShotFinder) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, OneShotFinder(name, around))


@contextmanager
def _structlog_without_extras() -> Iterator[None]:
    """`import rich` (and the rest of `HIDDEN_FROM_STRUCTLOG`) fails meanwhile; a name
    already imported is left alone."""
    hidden = [name for name in HIDDEN_FROM_STRUCTLOG if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # None: `import name` fails
    try:
        yield
    finally:
        for name in hidden:
            if sys.modules.get(name, "") is None:
                del sys.modules[name]


def hide_rich_from_structlog() -> None:
    """Install the finder once (it hides all of `HIDDEN_FROM_STRUCTLOG`); a no-op when
    structlog, or everything it would hide, is loaded already."""
    if all(n in sys.modules for n in HIDDEN_FROM_STRUCTLOG):
        return
    wrap_first_import("structlog", _structlog_without_extras)


def _deferring_ca() -> AbstractContextManager[object]:
    from hermes_common.tls_context import deferring  # ssl: aiohttp imports it anyway

    return deferring()


def defer_aiohttp_ca() -> None:
    """aiohttp's two TLS client contexts, built when `aiohttp.connector` is first imported,
    load the CA bundle when they are first used instead (`hermes_common.tls_context`)."""
    wrap_first_import("aiohttp.connector", _deferring_ca)


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
