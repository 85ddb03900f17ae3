"""Adapter discovery.

Concrete adapters are reached only through this registry: installed packages declare an
`AdapterSpec` in the `hermes.adapters` entry-point group (`name = "package.module:SPEC"`), and
tests may `register()` one explicitly. Explicit registrations win over entry points of the
same name. Looking a spec up imports the adapter's settings model, never its platform SDK: the
SDK is imported when `create_adapter` builds the adapter.
"""

from __future__ import annotations

import difflib
import functools
import sys
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from gateway.ports import AdapterSpec, BasePlatformAdapter, PlatformSettings

__all__ = [
    "ENTRY_POINT_GROUP",
    "AdapterLoadError",
    "AdapterNotFoundError",
    "adapter_spec",
    "available_adapters",
    "create_adapter",
    "register",
    "unregister",
]

ENTRY_POINT_GROUP = "hermes.adapters"

AnySpec = AdapterSpec[Any]

_explicit: dict[str, AnySpec] = {}


class AdapterNotFoundError(LookupError):
    """No adapter of that name is registered or installed."""

    def __init__(self, name: str, available: list[str]) -> None:
        listing = ", ".join(available) if available else "none"
        close = difflib.get_close_matches(name, available, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        super().__init__(f"unknown adapter {name!r}{hint}; available adapters: {listing}")
        self.name = name
        self.available = available


class AdapterLoadError(ImportError):
    """An adapter is declared but its module or SDK could not be imported, or its entry point
    is not an `AdapterSpec`."""


def register(name: str, spec: AnySpec) -> None:
    """Register `spec` under `name`, shadowing an entry point of the same name.

    Raises:
        TypeError: `spec` is not an `AdapterSpec`.
    """
    if not isinstance(spec, AdapterSpec):
        raise TypeError(f"adapter {name!r}: expected an AdapterSpec, got {type(spec).__name__}")
    _explicit[name] = spec


def unregister(name: str) -> None:
    """Forget an explicit registration; a no-op when there is none."""
    _explicit.pop(name, None)


def _entry_points() -> dict[str, EntryPoint]:
    return _scan(tuple(sys.path))


@functools.lru_cache(maxsize=4)
def _scan(_search_path: tuple[str, ...]) -> dict[str, EntryPoint]:
    """The group's entry points; scanning the installed distributions is slow (about 10 ms),
    so it is done once per module search path (which is what decides what is installed)."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in found and found[ep.name].value != ep.value:
            import structlog  # only here: looking specs up stays cheap for the CLI

            structlog.get_logger("gateway.registry").warning(
                "adapter_entry_point_duplicate", adapter=ep.name, kept=found[ep.name].value,
                ignored=ep.value)
            continue
        found.setdefault(ep.name, ep)
    return found


def available_adapters() -> list[str]:
    """Sorted names of every registered or installed adapter (no module is imported)."""
    return sorted(set(_explicit) | set(_entry_points()))


def adapter_spec(name: str) -> AnySpec:
    """The spec of adapter `name`: its settings model and factory. Imports the adapter's
    package (light by contract), not its platform SDK.

    Raises:
        AdapterNotFoundError: nothing has that name (the message lists the available names
            and a close match).
        AdapterLoadError: the entry point cannot be imported or is not an `AdapterSpec`.
    """
    spec = _explicit.get(name)
    if spec is not None:
        return spec
    ep = _entry_points().get(name)
    if ep is None:
        raise AdapterNotFoundError(name, available_adapters())
    try:
        loaded = ep.load()
    except ImportError as exc:
        raise AdapterLoadError(
            f"adapter {name!r} ({ep.value}) could not be imported: {exc}"
        ) from exc
    if not isinstance(loaded, AdapterSpec):
        raise AdapterLoadError(
            f"adapter entry point {name!r} ({ep.value}) is {type(loaded).__name__}, "
            "not an AdapterSpec")
    return loaded


def create_adapter(
    name: str, settings: PlatformSettings | Mapping[str, Any] | None = None
) -> BasePlatformAdapter:
    """Build the adapter `name` from its settings (its model, or a mapping it validates).

    Raises what `adapter_spec` raises; `AdapterLoadError` when the platform SDK is missing;
    `pydantic.ValidationError` for invalid settings; `TypeError` when the factory returns
    something that is not a `BasePlatformAdapter`; whatever the factory raises.
    """
    spec = adapter_spec(name)
    try:
        adapter = spec.create(name, settings)
    except ImportError as exc:
        raise AdapterLoadError(
            f"adapter {name!r} could not be imported: {exc}. "
            f"Is its optional dependency installed (hermes-gateway[{name}])?"
        ) from exc
    if not isinstance(adapter, BasePlatformAdapter):
        raise TypeError(
            f"adapter factory {name!r} returned {type(adapter).__name__}, not a BasePlatformAdapter"
        )
    return adapter

