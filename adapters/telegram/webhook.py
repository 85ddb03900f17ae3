"""The webhook receiver: an aiohttp server that accepts Telegram's POSTs.

Requests whose `X-Telegram-Bot-Api-Secret-Token` header does not match the configured secret
are answered 401 and ignored. A request is answered 200 only after the update was handled
(durably recorded), so Telegram redelivers it when recording failed (500).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from adapters.telegram.settings import WebhookSettings
from gateway.ports import EventLogger
from hermes_common.settings import reveal

__all__ = ["SECRET_HEADER", "WebhookServer"]

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
_MAX_BODY = 2 * 1024 * 1024

OnUpdate = Callable[[dict[str, Any]], Awaitable[None]]


class WebhookServer:
    """Listens on `settings.host:settings.port` (port 0 = ephemeral) at `settings.path`."""

    def __init__(self, settings: WebhookSettings, on_update: OnUpdate,
                 logger: EventLogger) -> None:
        secret = reveal(settings.secret_token)
        if not secret:
            raise ValueError("webhook mode needs platforms.telegram.webhook.secret_token")
        self._s = settings
        self._secret = secret.encode()
        self._on_update = on_update
        self._log = logger
        self._runner: web.AppRunner | None = None
        self.port: int = 0
        self.rejected = 0

    async def start(self) -> int:
        """Bind and serve; returns the bound port. Raises `OSError` when it cannot listen."""
        app = web.Application(client_max_size=_MAX_BODY)
        app.router.add_post(self._s.path, self._receive)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._s.host, self._s.port)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or []  # no public accessor for the port
        self.port = sockets[0].getsockname()[1] if sockets else self._s.port
        return self.port

    async def stop(self) -> None:
        """Idempotent."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _receive(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self._secret):
            self.rejected += 1
            self._log.warning("telegram_webhook_secret_mismatch", remote=request.remote)
            return web.Response(status=401)
        try:
            data = json.loads(await request.read())
        except (ValueError, UnicodeDecodeError):
            return web.Response(status=400)
        if not isinstance(data, dict):
            return web.Response(status=400)
        try:
            await self._on_update(data)
        except Exception as exc:
            self._log.warning("telegram_webhook_update_not_recorded", error=type(exc).__name__,
                              retried_by_telegram=True)
            return web.Response(status=500)
        return web.Response(status=200)
