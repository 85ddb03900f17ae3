"""The TLS client context whose default CA certificates load at first use, and the switch
that makes plain `ssl.SSLContext`s defer them (see `hermes_common.lean.defer_aiohttp_ca`,
which uses it while `aiohttp.connector` is first imported). Imports `ssl`: only a gateway
that imports aiohttp loads this module."""

from __future__ import annotations

import ssl
import threading
from typing import Any

__all__ = ["DeferredCAContext", "deferring"]

_LOCK = threading.Lock()
_REAL_SET_PATHS = ssl.SSLContext.set_default_verify_paths


class DeferredCAContext(ssl.SSLContext):
    """An `ssl.SSLContext` whose default CA certificates are loaded on first use."""

    _hermes_ca_pending: bool

    def load_deferred_ca(self) -> None:
        """Load the default CA certificates now if they still wait (idempotent)."""
        if not getattr(self, "_hermes_ca_pending", False):
            return
        with _LOCK:
            if self._hermes_ca_pending:
                _REAL_SET_PATHS(self)
                self._hermes_ca_pending = False

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self.load_deferred_ca()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self.load_deferred_ca()
        return super().wrap_bio(*args, **kwargs)

    def get_ca_certs(self, binary_form: bool = False) -> Any:
        self.load_deferred_ca()
        return super().get_ca_certs(binary_form)

    def cert_store_stats(self) -> dict[str, int]:
        self.load_deferred_ca()
        return super().cert_store_stats()


def _defer_set_paths(self: ssl.SSLContext) -> None:
    """Stands in for `SSLContext.set_default_verify_paths` while `aiohttp.connector` runs
    (a subclass of someone else's loads them at once, as usual)."""
    if type(self) is not ssl.SSLContext:
        _REAL_SET_PATHS(self)
        return
    self.__class__ = DeferredCAContext
    self._hermes_ca_pending = True  # type: ignore[attr-defined]  # a DeferredCAContext now


class deferring:  # noqa: N801 - used as a context manager, like contextlib's
    """While inside: plain `ssl.SSLContext`s that would load the default CA certificates
    (`set_default_verify_paths`, also the end of `create_default_context`) defer it."""

    def __enter__(self) -> None:
        self._own = ssl.SSLContext.__dict__.get("set_default_verify_paths")
        # (a method assigned on the class: what the deferral is)
        ssl.SSLContext.set_default_verify_paths = _defer_set_paths  # type: ignore[method-assign]  # see above

    def __exit__(self, *exc: object) -> None:
        if self._own is not None:
            ssl.SSLContext.set_default_verify_paths = self._own  # type: ignore[method-assign]  # put back
        else:
            del ssl.SSLContext.set_default_verify_paths  # the inherited method again
