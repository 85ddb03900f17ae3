"""Adapter discovery.

Concrete adapters are reached only through this registry: installed packages declare factories
in the `hermes.adapters` entry-point group (`name = "package.module:factory"`), and tests may
`register()` one explicitly. A factory is a callable `(name, settings) -> BasePlatformAdapter`
where `name` is the platform key from the configuration and `settings` its config section.
Explicit registrations win over entry points of the same name.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import structlog

from gateway.ports import BasePlatformAdapter

__all__ = [
    "ENTRY_POINT_GROUP",
    "AdapterFactory",
    "AdapterLoadError",
    "AdapterNotFoundError",
    "available_adapters",
    "create_adapter",
    "load_adapter_factory",
    "register",
    "unregister",
]

ENTRY_POINT_GROUP = "hermes.adapters"

AdapterFactory = Callable[[str, Any], BasePlatformAdapter]

log = structlog.get_logger("gateway.registry")

_explicit: dict[str, AdapterFactory] = {}


class AdapterNotFoundError(LookupError):
    """No adapter of that name is registered or installed."""

    def __init__(self, name: str, available: list[str]) -> None:
        listing = ", ".join(available) if available else "none"
        super().__init__(f"unknown adapter {name!r}; available adapters: {listing}")
        self.name = name
        self.available = available


class AdapterLoadError(ImportError):
    """An adapter is declared but its module or SDK could not be imported."""


def register(name: str, factory: AdapterFactory) -> None:
    """Register `factory` under `name`, shadowing an entry point of the same name."""
    if not callable(factory):
        raise TypeError(f"adapter factory for {name!r} is not callable")
    _explicit[name] = factory


def unregister(name: str) -> None:
    """Forget an explicit registration; a no-op when there is none."""
    _explicit.pop(name, None)


def _entry_points() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in found and found[ep.name].value != ep.value:
            log.warning(
                "adapter entry point declared twice; keeping the first",
                adapter=ep.name,
                kept=found[ep.name].value,
                ignored=ep.value,
            )
            continue
        found.setdefault(ep.name, ep)
    return found


def available_adapters() -> list[str]:
    """Sorted names of every registered or installed adapter."""
    return sorted(set(_explicit) | set(_entry_points()))


def load_adapter_factory(name: str) -> AdapterFactory:
    """Return the factory for `name`.

    Raises `AdapterNotFoundError` (message lists the available names) when nothing has that
    name, and `AdapterLoadError` when the entry point exists but cannot be imported (typically
    a missing optional SDK, e.g. `pip install hermes-gateway[telegram]`).
    """
    factory = _explicit.get(name)
    if factory is not None:
        return factory
    ep = _entry_points().get(name)
    if ep is None:
        raise AdapterNotFoundError(name, available_adapters())
    try:
        loaded = ep.load()
    except ImportError as exc:
        raise AdapterLoadError(
            f"adapter {name!r} ({ep.value}) could not be imported: {exc}. "
            f"Is its optional dependency installed (hermes-gateway[{name}])?"
        ) from exc
    if not callable(loaded):
        raise AdapterLoadError(f"adapter entry point {name!r} ({ep.value}) is not callable")
    return loaded  # type: ignore[no-any-return]


def create_adapter(name: str, settings: Any = None) -> BasePlatformAdapter:
    """Build the adapter `name` from its settings.

    Raises what `load_adapter_factory` raises, `TypeError` when the factory returns something
    that is not a `BasePlatformAdapter`, and whatever the factory raises for bad settings.
    """
    adapter = load_adapter_factory(name)(name, settings)
    if not isinstance(adapter, BasePlatformAdapter):
        raise TypeError(
            f"adapter factory {name!r} returned {type(adapter).__name__}, not a BasePlatformAdapter"
        )
    return adapter
