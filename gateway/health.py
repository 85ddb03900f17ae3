"""The health and metrics HTTP server (`gateway.health`).

- `GET /healthz`: 200 while the event loop answers.
- `GET /readyz`: 200 only when every enabled adapter is connected (and live) and the storage
  probe says the state store is writable; otherwise 503 with a JSON list of reasons.
- `GET /status`: JSON: gateway info, adapters, loop lag, plus whatever the status providers
  return (active sessions, queue depths, compression jobs...).
- `GET /metrics`: Prometheus text from the gateway's private registry.

With a `token`, every endpoint but `/healthz` (left open for container probes) needs
`Authorization: Bearer <token>`; others get 401.

Port 0 in the configuration means "off"; tests pass `ephemeral=True` to bind a free port and
read it from `port`.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import inspect
import json
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog
from aiohttp import web

from gateway.config.redact import redact_text
from gateway.eventloop import loop_name
from gateway.metrics import CONTENT_TYPE, GatewayMetrics
from gateway.process import process_stats
from gateway.supervisor import AdapterSupervisor
from gateway.watchdog import LoopWatchdog

__all__ = ["HealthServer", "StatusProvider", "StorageProbe"]

log = structlog.get_logger("gateway.health")

#: Returns True when storage is writable; may be sync or async. Raising counts as False.
StorageProbe = Callable[[], bool | Awaitable[bool]]
#: Returns JSON-able data for one `/status` section; may be sync or async.
StatusProvider = Callable[[], Any]
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def _call(fn: Callable[[], Any], timeout_s: float) -> Any:
    result = fn()
    if inspect.isawaitable(result):
        async with asyncio.timeout(timeout_s):
            result = await result
    return result


class HealthServer:
    """aiohttp server for the probes. `start()` is a no-op when disabled (port 0, not ephemeral).

    Handlers never raise: a failing probe or provider shows up as a reason or an `error` field.
    """

    def __init__(
        self,
        *,
        supervisor: AdapterSupervisor,
        metrics: GatewayMetrics,
        storage_probe: StorageProbe,
        host: str = "127.0.0.1",
        port: int = 8765,
        ephemeral: bool = False,
        status_providers: Mapping[str, StatusProvider] | None = None,
        watchdog: LoopWatchdog | None = None,
        probe_timeout_s: float = 2.0,
        version: str | None = None,
        token: str | None = None,
    ) -> None:
        self._supervisor = supervisor
        self._metrics = metrics
        self._probe = storage_probe
        self.host = host
        self._config_port = port
        self._ephemeral = ephemeral
        self._providers = dict(status_providers or {})
        self._watchdog = watchdog
        self._probe_timeout_s = probe_timeout_s
        self._version = version
        self._token_digest = (hashlib.sha256(token.encode()).digest() if token else None)
        self._started_at = time.time()
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    @property
    def enabled(self) -> bool:
        return self._ephemeral or self._config_port > 0

    @property
    def url(self) -> str | None:
        return None if self.port is None else f"http://{self.host}:{self.port}"

    async def __aenter__(self) -> HealthServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @web.middleware
    async def _auth(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        if self._token_digest is None or request.path == "/healthz":
            return await handler(request)
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        digest = hashlib.sha256(given.strip().encode()).digest()
        if scheme.lower() != "bearer" or not hmac.compare_digest(digest, self._token_digest):
            return web.json_response({"error": "unauthorized"}, status=401,
                                     headers={"WWW-Authenticate": 'Bearer realm="hermes"'})
        return await handler(request)

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/status", self._status)
        app.router.add_get("/metrics", self._metrics_handler)
        return app

    async def start(self) -> None:
        """Bind and serve. Raises `OSError` when the port is taken. Idempotent."""
        if not self.enabled or self._runner is not None:
            return
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, 0 if self._ephemeral else self._config_port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        log.info("http_server_listening", server="health", host=self.host, port=self.port)

    async def stop(self) -> None:
        """Idempotent; must not raise."""
        runner, self._runner = self._runner, None
        if runner is not None:
            try:
                await runner.cleanup()
            except Exception:
                log.warning("http_server_cleanup_failed", server="health", exc_info=True)
        self.port = None

    async def readiness(self) -> tuple[bool, list[str]]:
        """(ready, reasons): every adapter connected and the storage probe True."""
        _, reasons = self._supervisor.readiness()
        try:
            writable = bool(await _call(self._probe, self._probe_timeout_s))
            if not writable:
                reasons.append("storage is not writable")
        except TimeoutError:
            reasons.append("storage probe timed out")
        except Exception as exc:
            reasons.append(redact_text(f"storage probe failed: {type(exc).__name__}: {exc}")[:200])
        return not reasons, reasons

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _readyz(self, _request: web.Request) -> web.Response:
        ready, reasons = await self.readiness()
        body = {
            "ready": ready,
            "reasons": reasons,
            "adapters": {st.name: st.state.value for st in self._supervisor.snapshot()},
        }
        return web.json_response(body, status=200 if ready else 503)

    async def _status(self, _request: web.Request) -> web.Response:
        body: dict[str, Any] = {
            "gateway": {
                "pid": os.getpid(),
                "version": self._version,
                "started_at": self._started_at,
                "uptime_s": round(time.time() - self._started_at, 3),
                "event_loop": loop_name(asyncio.get_running_loop()),
                **process_stats(),
            },
            "adapters": [st.to_dict() for st in self._supervisor.snapshot()],
        }
        if self._watchdog is not None:
            body["loop"] = self._watchdog.snapshot()
        for key, provider in self._providers.items():
            try:
                body[key] = await _call(provider, self._probe_timeout_s)
            except Exception as exc:
                body[key] = {"error": redact_text(f"{type(exc).__name__}: {exc}")[:200]}
        return web.json_response(body, dumps=_dumps)

    async def _metrics_handler(self, _request: web.Request) -> web.Response:
        for st in self._supervisor.snapshot():
            self._metrics.set_adapter_state(st.name, st.state.value)
        return web.Response(body=self._metrics.render(), headers={"Content-Type": CONTENT_TYPE})


def _dumps(obj: Any) -> str:
    return json.dumps(obj, default=str)

