"""`ApiAdapter`: the OpenAI-compatible HTTP API as a platform adapter of the gateway.

Each HTTP request becomes one `MessageEvent`; the gateway answers it through `send` / `edit`
(streamed to the client as it grows) and ends it with `turn_complete`. Messages that belong to
no open request (e.g. a notice sent after the client left) are accepted and dropped: an HTTP
client has no inbox to push to. Media is not supported: the API carries text only.
"""

from __future__ import annotations

import asyncio
import errno
import uuid
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from adapters.api.server import ApiServer
from adapters.api.settings import ApiSettings
from adapters.api.turns import TurnRegistry
from gateway.events import ErrorKind, OutboundAttachment, OutboundMessage, SendResult
from gateway.ports import (
    AdapterContext,
    AdapterError,
    AdapterFatalError,
    BasePlatformAdapter,
    BudgetSpec,
    Capabilities,
    RateProfile,
)
from hermes_common.waits import wait_any

__all__ = ["ApiAdapter"]

_UNROUTED = "unrouted:"


class ApiAdapter(BasePlatformAdapter):
    """OpenAI-compatible `/v1/chat/completions` and `/v1/models` on `settings.host:port`.

    `port` holds the bound port once `ctx.connected()` was called (useful with port 0).
    """

    capabilities = Capabilities(
        edit=True,
        typing=False,
        reactions=False,
        threads=False,
        media=False,
        max_length=1_000_000,
        dialect="markdown",
        rate_profile=RateProfile(per_chat=BudgetSpec(())),  # one request, one client: no limit
        trusted_auth=True,
        push=False,
        reply_anywhere=False,
    )

    settings: ApiSettings

    def __init__(
        self, name: str = "api", settings: ApiSettings | Mapping[str, Any] | None = None
    ) -> None:
        """Raises `pydantic.ValidationError` for invalid settings (a mapping is validated)."""
        self.name = name
        self.settings = ApiSettings.coerce(settings)
        self.turns = TurnRegistry()
        self.port: int | None = None
        self._runner: web.AppRunner | None = None
        self._stopped = asyncio.Event()
        self._lock = asyncio.Lock()

    def listening(self) -> tuple[str, int] | None:
        return (self.settings.host, self.port) if self.port is not None else None

    async def start(self, ctx: AdapterContext) -> None:
        """Serve until `ctx.stop_event` is set or `stop()` is called.

        Raises `AdapterError` when the address cannot be bound. Open requests are answered
        with an error when the adapter stops.
        """
        self._stopped = asyncio.Event()
        server = ApiServer(self.name, self.settings, self.turns, ctx)
        runner = web.AppRunner(server.build_app(), access_log=None, shutdown_timeout=5.0)
        await runner.setup()
        self._runner = runner
        try:
            site = web.TCPSite(runner, self.settings.host, self.settings.port)
            try:
                await site.start()
            except OSError as exc:
                # Taken by another program or not allowed: a restart would not help.
                kind = AdapterFatalError if exc.errno in (errno.EADDRINUSE, errno.EACCES,
                                                          errno.EADDRNOTAVAIL) else AdapterError
                raise kind(
                    f"cannot listen on {self.settings.host}:{self.settings.port}: {exc.strerror}"
                ) from None
            self.port = _bound_port(runner, self.settings.port)
            ctx.logger.info("http_server_listening", server=self.name, host=self.settings.host,
                            port=self.port)
            ctx.connected()
            await wait_any(ctx.stop_event, self._stopped)
        finally:
            await self._shutdown()

    async def stop(self) -> None:
        """Idempotent; returns once the server is closed. Must not raise."""
        self._stopped.set()
        await self._shutdown()

    async def _shutdown(self) -> None:
        async with self._lock:
            runner, self._runner = self._runner, None
            if runner is None:
                return
            self.turns.close_all("the gateway is shutting down")
            await runner.cleanup()

    async def send(self, message: OutboundMessage) -> SendResult:
        """Add a bot message to the open request it replies to (else the chat's newest open
        request); dropped with success when no request is waiting. Never raises."""
        turn = self.turns.for_reply(message.chat_id, message.reply_to)
        if turn is None:
            return SendResult.success(f"{_UNROUTED}{uuid.uuid4().hex}")
        message_id = self.turns.bind_message(turn)
        turn.update(message_id, message.text)
        return SendResult.success(message_id)

    async def edit(
        self, chat_id: str, message_id: str, text: str, *, formatted: bool = True
    ) -> SendResult:
        """Replace a bot message's text (streamed to the client as the new suffix)."""
        turn = self.turns.by_message(message_id)
        if turn is None:
            if message_id.startswith(_UNROUTED):
                return SendResult.success(message_id)
            return SendResult.failure(ErrorKind.NOT_FOUND, "unknown message")
        turn.update(message_id, text)
        return SendResult.success(message_id)

    async def send_media(
        self,
        chat_id: str,
        attachment: OutboundAttachment,
        *,
        thread_id: str | None = None,
        caption: str | None = None,
    ) -> SendResult:
        return SendResult.failure(ErrorKind.UNKNOWN, "media is not supported by the HTTP API")

    async def turn_complete(
        self, chat_id: str, *, reply_to: str | None, ok: bool, error: str | None = None
    ) -> None:
        """Answer the request `reply_to` (see `ApiServer` for status codes). Never raises."""
        turn = self.turns.for_reply(chat_id, reply_to)
        if turn is not None:
            self.turns.complete(turn, ok=ok, error=error)


def _bound_port(runner: web.AppRunner, configured: int) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    return configured
