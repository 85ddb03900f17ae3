"""Lazy re-exports for a package `__init__`: a name is imported from its module on first use.

Lets a package keep a light import (e.g. an adapter package whose entry point must not import
its platform SDK) while still re-exporting the heavy names:

    __getattr__ = lazy_exports(__name__, {"TelegramAdapter": "adapters.telegram.adapter"})
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(package: str, where: Mapping[str, str]) -> Callable[[str], object]:
    """A module `__getattr__` resolving each name of `where` (name → module) on first access.

    The returned function raises `AttributeError` for other names, and whatever the import
    raises (e.g. `ImportError` for a missing SDK) for the listed ones.
    """
    table = dict(where)

    def __getattr__(name: str) -> object:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
