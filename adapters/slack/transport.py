"""The two ways events reach the adapter: Socket Mode (default) and the HTTP Events API.

Both feed the same Bolt `AsyncApp`, built with `process_before_response=True`: the listener
(which awaits the durable `ctx.emit`) finishes before the envelope is acknowledged or the HTTP
request answered, so an event is never acknowledged before it is recorded.

The Socket Mode client runs every envelope as its own task, so two messages of one chat could
overtake each other while the first waits on a lookup or a file download. `ChatOrder` chains
the envelopes of each channel in the order they came off the socket; other channels go on
concurrently.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import AUTH_ERRORS, api_error_code
from adapters.slack.settings import SlackSettings
from gateway.ports import AdapterAuthError, AdapterContext, AdapterError
from hermes_common.waits import sleep_unless

__all__ = ["ChatOrder", "give_up_after", "run_http", "run_socket"]

_SDK_LOG = logging.getLogger("adapters.slack.sdk")


def _channel_of(message: Mapping[str, Any]) -> str | None:
    payload = message.get("payload")
    if not isinstance(payload, Mapping):
        return None
    event = payload.get("event")
    channel = event.get("channel") if isinstance(event, Mapping) else payload.get("channel_id")
    return channel if isinstance(channel, str) and channel else None


_Run = Callable[[dict[str, Any], str], Coroutine[Any, Any, None]]


class ChatOrder:
    """Runs a Socket Mode client's envelopes one after another per channel, in arrival order.

    `wrap(run)` returns a drop-in for the client's `run_message_listeners`. The client calls it
    synchronously, in queue order, when it starts an envelope's task; the envelope's place in
    its channel's chain is taken right then, before anything is awaited. Envelopes without a
    channel (hello, disconnect) are not held.
    """

    def __init__(self) -> None:
        self._tails: dict[str, asyncio.Future[None]] = {}

    def wrap(self, run: _Run) -> _Run:
        def ordered(message: dict[str, Any], raw: str) -> Coroutine[Any, Any, None]:
            channel = _channel_of(message)
            if channel is None:
                return run(message, raw)
            before = self._tails.get(channel)
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._tails[channel] = done
            return self._after(before, done, channel, run(message, raw))

        return ordered

    async def _after(self, before: asyncio.Future[None] | None, done: asyncio.Future[None],
                     channel: str, work: Coroutine[Any, Any, None]) -> None:
        try:
            if before is not None:
                await asyncio.shield(before)
            await work
        finally:
            work.close()  # never started (cancelled while waiting): no "never awaited" warning
            done.set_result(None)
            if self._tails.get(channel) is done:
                del self._tails[channel]

    def pending(self) -> int:
        """Channels with an envelope still running or waiting."""
        return len(self._tails)


def give_up_after(settings: SlackSettings) -> float:
    """Seconds without a live socket after which Socket Mode is declared failed."""
    return settings.give_up_s or max(20.0, 6 * settings.ping_interval_s)


async def _open_url(web_client: AsyncWebClient, app_token: str) -> str:
    try:
        resp = await web_client.apps_connections_open(app_token=app_token)
    except SlackApiError as exc:
        code = api_error_code(exc)
        if code in AUTH_ERRORS:
            raise AdapterAuthError(f"slack refused the app token ({code})") from None
        raise AdapterError(f"apps.connections.open failed ({code or 'error'})") from None
    except Exception as exc:  # noqa: BLE001 - any transport failure is an AdapterError
        raise AdapterError(f"apps.connections.open failed ({type(exc).__name__})") from None
    url = resp.get("url")
    if not isinstance(url, str) or not url:
        raise AdapterError("apps.connections.open returned no url")
    return url


async def run_socket(
    app: AsyncApp,
    web_client: AsyncWebClient,
    settings: SlackSettings,
    ctx: AdapterContext,
    stop: asyncio.Event,
) -> None:
    """Connect over Socket Mode and run until `stop` is set.

    The SDK client reconnects by itself after a `disconnect` message, a closed socket or failed
    pings; this loop reports progress while the socket is alive (frames and pongs) and raises
    `AdapterError` when it stayed down longer than `give_up_after`. A refused app token raises
    `AdapterAuthError`.
    """
    app_token = settings.plain().app_token
    url = await _open_url(web_client, app_token)
    handler = AsyncSocketModeHandler(app, app_token=app_token, web_client=web_client,
                                     ping_interval=settings.ping_interval_s, logger=_SDK_LOG)
    client = handler.client
    ordered = ChatOrder().wrap(client.run_message_listeners)
    # The SDK has no hook to order its per-envelope tasks: its dispatcher is replaced.
    client.run_message_listeners = ordered  # type: ignore[method-assign,assignment]  # see above

    async def on_frame(_message: object) -> None:
        ctx.progress()

    client.on_message_listeners.append(on_frame)
    client.wss_uri = url
    try:
        try:
            await asyncio.wait_for(client.connect(), settings.connect_timeout_s)
        except TimeoutError:
            raise AdapterError("socket mode connect timed out") from None
        if not await client.is_connected():
            raise AdapterError("socket mode did not connect")
        ctx.connected()
        await _watch(client, ctx, stop, settings)
    finally:
        try:
            await handler.close_async()
        except Exception as exc:  # the socket is dropped either way
            ctx.logger.warning("slack_socket_close_failed", error=type(exc).__name__)


async def _watch(client: object, ctx: AdapterContext, stop: asyncio.Event,
                 settings: SlackSettings) -> None:
    interval = max(0.05, settings.ping_interval_s / 2)
    fresh_s = 3 * settings.ping_interval_s
    limit = give_up_after(settings)
    last_ok = time.monotonic()
    while not await sleep_unless(interval, stop):
        pong = getattr(client, "last_ping_pong_time", None)
        alive = await client.is_connected()  # type: ignore[attr-defined]  # on the aiohttp client, not its base type
        if alive and (pong is None or time.time() - pong <= fresh_s):
            ctx.progress()
            last_ok = time.monotonic()
        elif time.monotonic() - last_ok > limit:
            raise AdapterError(f"socket mode connection down for more than {limit:.0f}s")


async def run_http(
    app: AsyncApp,
    settings: SlackSettings,
    ctx: AdapterContext,
    stop: asyncio.Event,
    on_bound: Callable[[str], None],
) -> None:
    """Serve the Events API on `http.host:http.port` + `http.path` until `stop` is set.

    Bolt verifies `X-Slack-Signature` (401 for a bad one, stale timestamps refused) and answers
    `url_verification`. Redeliveries (`X-Slack-Retry-Num`) go through the same path: the
    durable dedup makes them no-ops, answered 200. `on_bound` receives the listening URL.
    Raises `AdapterError` when the port cannot be bound.
    """

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.text()
        bolt_req = AsyncBoltRequest(body=body, query=request.query_string,
                                    headers={k: v for k, v in request.headers.items()})
        resp = await app.async_dispatch(bolt_req)
        if resp.status < 400:
            ctx.progress()
        return await to_aiohttp_response(resp)

    web_app = web.Application(client_max_size=4 * 1024 * 1024)
    web_app.router.add_post(settings.http.path, handle)
    runner = web.AppRunner(web_app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, settings.http.host, settings.http.port)
        try:
            await site.start()
        except OSError as exc:
            raise AdapterError(f"cannot listen on {settings.http.host}:{settings.http.port}: "
                               f"{exc.strerror or type(exc).__name__}") from None
        host, port = _bound(runner, settings)
        on_bound(f"http://{host}:{port}{settings.http.path}")
        ctx.connected()
        await stop.wait()
    finally:
        await runner.cleanup()


def _bound(runner: web.AppRunner, settings: SlackSettings) -> tuple[str, int]:
    for addr in runner.addresses:
        if isinstance(addr, tuple) and len(addr) >= 2:
            return str(addr[0]), int(addr[1])
    return settings.http.host, settings.http.port
