"""The shipped in-memory platform adapter (`hermes.adapters` entry point
`fake = "adapters.fake:SPEC"`).

Used by full-stack tests and benchmarks; see `FakeAdapter` and its settings `FakeSettings`.
"""

from __future__ import annotations

from adapters.fake.adapter import FakeAdapter, Injected
from adapters.fake.records import FakeCall, FakeMessage, TurnCompleted
from adapters.fake.settings import FakeSettings
from gateway.ports import AdapterSpec

__all__ = [
    "SPEC",
    "FakeAdapter",
    "FakeCall",
    "FakeMessage",
    "FakeSettings",
    "Injected",
    "TurnCompleted",
]

SPEC = AdapterSpec(FakeSettings, FakeAdapter)
