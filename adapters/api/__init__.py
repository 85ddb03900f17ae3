"""The built-in `api` adapter: an OpenAI-compatible HTTP server (`/v1/chat/completions`,
`/v1/models`). Registered as the `hermes.adapters` entry point `api = "adapters.api:SPEC"`.

This package only declares the adapter (its settings model and a lazy factory), so that
finding it stays cheap; the adapter itself is `adapters.api.adapter.ApiAdapter`.
"""

from __future__ import annotations

from adapters.api.settings import ApiSettings
from gateway.ports import AdapterSpec, lazy_factory

__all__ = ["SPEC", "ApiSettings"]

SPEC = AdapterSpec(ApiSettings, lazy_factory("adapters.api.adapter:ApiAdapter"))
