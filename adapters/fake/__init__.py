"""The shipped in-memory platform adapter (`hermes.adapters` entry point `fake`).

Used by full-stack tests and benchmarks; see `FakeAdapter`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.fake.adapter import FakeAdapter, Injected
from adapters.fake.records import FakeCall, FakeMessage, TurnCompleted

__all__ = ["FakeAdapter", "FakeCall", "FakeMessage", "Injected", "TurnCompleted", "create"]

_SWITCHES = (
    "edit",
    "typing",
    "media",
    "delete",
    "reactions",
    "threads",
    "max_length",
    "length_measure",
    "dialect",
    "liveness_window_s",
    "trusted_auth",
    "progress_interval_s",
)


def create(name: str, settings: Any = None) -> FakeAdapter:
    """Entry-point factory. `settings` (a mapping, a config model or None) may set any of the
    constructor's capability switches; other keys are ignored."""
    options: dict[str, Any] = {}
    for key in _SWITCHES:
        if isinstance(settings, Mapping):
            if key in settings:
                options[key] = settings[key]
        elif settings is not None and getattr(settings, key, None) is not None:
            options[key] = getattr(settings, key)
    return FakeAdapter(name, **options)
