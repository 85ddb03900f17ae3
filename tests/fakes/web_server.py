"""Local fakes for the web tools: a page server and the search APIs (SearXNG, Brave, Tavily),
each an aiohttp app on 127.0.0.x with a random port that records every request it receives.

    async with FakeWebServer() as site:
        site.pages["/a"] = Page("<html>…</html>")
        site.pages["/r"] = Page(status=302, headers={"Location": "http://10.0.0.1/"})
        site.requests  # [(method, path_qs, headers)]

    async with FakeSearchServer() as api:
        api.hits = [("Title", "https://example.org/", "snippet")]
        api.failures = [(429, {"Retry-After": "1"})]   # consumed one per request, first
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["FakeSearchServer", "FakeWebServer", "Page"]


@dataclass
class Page:
    body: bytes | str = b""
    content_type: str = "text/html"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    #: Requests to this page wait until this event is set (concurrency tests).
    gate: asyncio.Event | None = None


class _Site:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.bodies: list[Any] = []
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _app(self) -> web.Application:
        raise NotImplementedError

    async def start(self) -> _Site:
        self._runner = web.AppRunner(self._app(), shutdown_timeout=0.5, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        server = site._server  # aiohttp exposes no public accessor for the bound port
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Any:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class FakeWebServer(_Site):
    """Serves `pages` by path; 404 for the rest."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        super().__init__(host)
        self.pages: dict[str, Page] = {}

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._serve)
        return app

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.method, request.path_qs, dict(request.headers)))
        page = self.pages.get(request.path)
        if page is None:
            return web.Response(status=404, text="not found")
        if page.gate is not None:
            await page.gate.wait()
        body = page.body.encode() if isinstance(page.body, str) else page.body
        if "Content-Type" in page.headers:  # given whole, charset included
            return web.Response(status=page.status, body=body, headers=page.headers)
        return web.Response(status=page.status, body=body, headers=page.headers,
                            content_type=page.content_type)


class FakeSearchServer(_Site):
    """SearXNG (`GET /search?format=json`), Brave (`GET /res/v1/web/search`) and Tavily
    (`POST /search`) at once, answering from `hits`; `failures` are served first."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        super().__init__(host)
        self.hits: list[tuple[str, str, str]] = []
        self.failures: deque[tuple[int, dict[str, str]]] = deque()

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/search", self._searxng)
        app.router.add_post("/search", self._tavily)
        app.router.add_get("/res/v1/web/search", self._brave)
        return app

    def _failure(self) -> web.Response | None:
        if not self.failures:
            return None
        status, headers = self.failures.popleft()
        return web.json_response({"error": "fake failure"}, status=status, headers=headers)

    async def _searxng(self, request: web.Request) -> web.Response:
        self.requests.append((request.method, request.path_qs, dict(request.headers)))
        if (fail := self._failure()) is not None:
            return fail
        if request.query.get("format") != "json":
            return web.Response(status=403, text="format not allowed")
        return web.json_response({"query": request.query.get("q"), "results": [
            {"title": t, "url": u, "content": s, "engine": "fake"} for t, u, s in self.hits]})

    async def _brave(self, request: web.Request) -> web.Response:
        self.requests.append((request.method, request.path_qs, dict(request.headers)))
        if (fail := self._failure()) is not None:
            return fail
        if not request.headers.get("X-Subscription-Token"):
            return web.json_response({"error": "no token"}, status=401)
        count = int(request.query.get("count", "20"))
        return web.json_response({"type": "search", "web": {"results": [
            {"title": t, "url": u, "description": s} for t, u, s in self.hits[:count]]}})

    async def _tavily(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append((request.method, request.path_qs, dict(request.headers)))
        self.bodies.append(body)
        if (fail := self._failure()) is not None:
            return fail
        if request.headers.get("Authorization", "") != "Bearer tvly-test":
            return web.json_response({"detail": "unauthorized"}, status=401)
        return web.json_response({"query": body["query"], "results": [
            {"title": t, "url": u, "content": s, "score": 0.9}
            for t, u, s in self.hits[: body.get("max_results", 5)]]})
