"""The built-in `api` adapter: an OpenAI-compatible HTTP server (`/v1/chat/completions`,
`/v1/models`). Registered as the `hermes.adapters` entry point `api = "adapters.api:create"`."""

from __future__ import annotations

from typing import Any

from adapters.api.adapter import ApiAdapter
from adapters.api.server import EVENT_ID_HEADERS, SESSION_HEADER
from adapters.api.settings import ApiSettings
from adapters.api.turns import CURSORS

__all__ = ["CURSORS", "EVENT_ID_HEADERS", "SESSION_HEADER", "ApiAdapter", "ApiSettings", "create"]


def create(name: str, settings: Any) -> ApiAdapter:
    """Entry-point factory. `settings`: a pydantic model, a dict or None (`platforms.api`).

    Raises `ValueError` for malformed settings.
    """
    return ApiAdapter(name, settings)
