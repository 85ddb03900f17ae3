"""aiohttp's TLS client contexts, with their CA certificates loaded when first used.

Importing `aiohttp.connector` builds two client contexts (the verifying one and the one for
`ssl=False`), and each parses the system's CA bundle there and then: about 19 ms of CPU and
1-3 MB of memory apiece, a tenth of a gateway's start, paid even by a gateway that never
opens a TLS connection through aiohttp (the `api` adapter with a model on plain
`http://127.0.0.1`). `defer_aiohttp_ca()` arranges that, whenever `aiohttp.connector` is first
imported, the CA bundle step of those two contexts (`set_default_verify_paths`, which
`create_default_context` ends with too) is left for later: such a context loads the bundle
the first time it wraps a socket or a memory BIO (every connection does; under a lock, once),
or is asked for its certificates. Nothing else about the contexts changes (protocol, options,
verification mode, hostname check, ALPN), and they are still `ssl.SSLContext`s.

The bundle is then read after start-up, so a `SSL_CERT_FILE` set by then (as
`gateway.process.detect_ca_bundle` does where the system has no bundle) is the one used. The
first TLS connection pays the ~19 ms once, on the thread that opens it.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["defer_aiohttp_ca"]

#: The module whose import builds the contexts.
TARGET = "aiohttp.connector"


class _DeferringLoader:
    """Runs the module's own loader inside `deferring()`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._inner.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        from hermes_common.tls_context import deferring  # ssl: aiohttp imports it anyway

        with deferring():
            self._inner.exec_module(module)


class _ConnectorFinder:
    """A one-shot meta path finder for `aiohttp.connector`."""

    def find_spec(self, name: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name != TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _DeferringLoader(spec.loader)  # type: ignore[assignment]  # a Loader by duck typing
        return spec


def defer_aiohttp_ca() -> None:
    """Install the finder once; a no-op when `aiohttp.connector` is loaded already."""
    if TARGET in sys.modules:
        return
    if not any(isinstance(f, _ConnectorFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _ConnectorFinder())
