"""Point discord.py at configured REST and gateway endpoints.

discord.py has no public option for its endpoints: it reads the class attributes
`discord.http.Route.BASE` (REST base, e.g. `https://discord.com/api/v10`) and
`discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY` (a `yarl.URL`). This module is the one place
that overrides them. They are process-wide: every discord.py client in the process uses the
same endpoints.
"""

from __future__ import annotations

from collections.abc import Callable

import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

__all__ = ["apply_endpoints"]

#: overrides currently applied (a supervisor may start a new client before the old one's
#: cleanup ran); the originals come back only when the last one is restored
_active: list[object] = []
_originals: tuple[str, yarl.URL] = (Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)


def apply_endpoints(api_base_url: str, gateway_url: str | None) -> Callable[[], None]:
    """Set discord.py's REST base and gateway URL; return a callable restoring the originals.

    `gateway_url` None keeps the library's gateway. Raises `ValueError` for a gateway URL that
    is not `ws://` or `wss://`. The restore callable is idempotent and must not raise; while a
    later override is still applied, restoring an earlier one leaves the later one in place.
    """
    global _originals
    gateway = None
    if gateway_url:
        gateway = yarl.URL(gateway_url)
        if gateway.scheme not in ("ws", "wss"):
            raise ValueError(f"gateway_url must be a ws:// or wss:// URL, got {gateway.scheme!r}")
    if not _active:
        _originals = (Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)
    token = object()
    _active.append(token)
    Route.BASE = api_base_url.rstrip("/")
    DiscordWebSocket.DEFAULT_GATEWAY = gateway if gateway is not None else _originals[1]

    def restore() -> None:
        if token not in _active:
            return
        _active.remove(token)
        if not _active:
            Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = _originals

    return restore
