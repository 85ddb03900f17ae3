"""Finding memory providers: the entry point group `hermes.memory_providers`.

A package offers a provider by naming its `MemoryProvider` subclass in its `pyproject.toml`:

    [project.entry-points."hermes.memory_providers"]
    mine = "my_package.memory:MyProvider"

Loading a provider's class imports only its module, which must not import the service's
client library at module level (the config check loads every named class to validate its
settings; the client is imported in `start()`).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from pydantic import BaseModel

from agent_core.memory.provider import MemoryProvider, ProviderSettings

__all__ = ["ENTRY_POINT_GROUP", "MemoryProviderError", "available_providers", "load_provider",
           "provider_class"]

ENTRY_POINT_GROUP = "hermes.memory_providers"


class MemoryProviderError(LookupError):
    """No usable provider of that name: unknown, failed to import, or not a provider.
    The message names the provider and never a configured value."""


def _entry_points() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return found


def available_providers() -> list[str]:
    """Names of the installed providers, sorted."""
    return sorted(_entry_points())


def provider_class(name: str) -> type[MemoryProvider]:
    """The provider class registered as `name`. Raises `MemoryProviderError`."""
    ep = _entry_points().get(name)
    if ep is None:
        known = ", ".join(available_providers()) or "none"
        raise MemoryProviderError(f"unknown memory provider {name!r} (installed: {known})")
    try:
        cls = ep.load()
    except Exception as exc:  # noqa: BLE001 - a broken plugin is a configuration problem
        raise MemoryProviderError(
            f"memory provider {name!r} failed to load ({type(exc).__name__})") from None
    if not (isinstance(cls, type) and issubclass(cls, MemoryProvider)):
        raise MemoryProviderError(f"entry point {name!r} is not a MemoryProvider subclass")
    return cls


def load_provider(name: str, settings: ProviderSettings | Mapping[str, Any] | None = None
                  ) -> MemoryProvider:
    """Build provider `name` with `settings` (validated by its `settings_model` when given as
    a mapping). Raises `MemoryProviderError`, or pydantic's `ValidationError` for bad
    settings. Builds only: nothing is opened until `start()`."""
    cls = provider_class(name)
    if isinstance(settings, cls.settings_model):
        return cls(settings)
    if isinstance(settings, BaseModel):
        data: dict[str, Any] = settings.model_dump()
    else:
        data = dict(settings or {})
    return cls(cls.settings_model.model_validate(data))
