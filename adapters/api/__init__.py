"""The built-in `api` adapter: an OpenAI-compatible HTTP server (`/v1/chat/completions`,
`/v1/models`). Registered as the `hermes.adapters` entry point `api = "adapters.api:SPEC"`.

Importing this package loads only the settings model; the server modules (aiohttp) load when
the adapter is built or one of their names is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.api.settings import ApiSettings
from gateway.ports import AdapterSpec, BasePlatformAdapter
from hermes_common.lazy import lazy_exports

if TYPE_CHECKING:
    from adapters.api.adapter import ApiAdapter
    from adapters.api.server import EVENT_ID_HEADERS, SESSION_HEADER
    from adapters.api.turns import CURSORS

__all__ = [
    "CURSORS",
    "EVENT_ID_HEADERS",
    "SESSION_HEADER",
    "SPEC",
    "ApiAdapter",
    "ApiSettings",
    "create",
]

def _build(name: str, settings: ApiSettings) -> BasePlatformAdapter:
    from adapters.api.adapter import ApiAdapter

    return ApiAdapter(name, settings)


SPEC = AdapterSpec(settings=ApiSettings, factory=_build)
create = SPEC.create


__getattr__ = lazy_exports(__name__, {
    "ApiAdapter": "adapters.api.adapter",
    "EVENT_ID_HEADERS": "adapters.api.server",
    "SESSION_HEADER": "adapters.api.server",
    "CURSORS": "adapters.api.turns",
})
