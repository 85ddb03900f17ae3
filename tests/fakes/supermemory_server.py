"""A fake of the Supermemory v5 HTTP API (aiohttp, 127.0.0.1, random port) for tests.

It speaks the endpoints and JSON shapes the official `supermemory` client (v5) uses:

    POST /ns/{namespace}/document   {"content", "id"?, "metadata"?, ...}  → {"id", "status"}
    POST /ns/{namespace}/search     {"query", "searchMode"?, "limit"?}    → {"results", "searchTime"}
    POST /ns/{namespace}/profile    {}                                    → {"profile": {...}}

Every request needs `Authorization: Bearer <api_key>` (401 otherwise). A namespace is
isolated as in the real service: a search sees only the memories of its own namespace. A
document's content becomes one memory at once (the real service extracts them later); a
document added again under the same id grows (its content is appended). Tests may `seed`
memories and profile facts, make a route hang (`hang["search"] = 30`) or fail
(`fail["search"] = 500`); every request is recorded.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["Call", "FakeSupermemory"]

_NOW = "2026-01-01T00:00:00.000Z"


@dataclass(frozen=True, slots=True)
class Call:
    route: str  # "document" | "search" | "profile"
    namespace: str
    body: dict[str, Any]
    authorization: str | None


@dataclass(slots=True)
class _Doc:
    id: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)


class FakeSupermemory:
    def __init__(self, api_key: str = "sm-test-key-0123456789") -> None:
        self.api_key = api_key
        self.calls: list[Call] = []
        self.docs: dict[str, dict[str, _Doc]] = {}
        self.seeded: dict[str, list[str]] = {}
        self.profiles: dict[str, tuple[list[str], list[str]]] = {}
        self.hang: dict[str, float] = {}
        self.fail: dict[str, int] = {}
        self._stopping = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def seed(self, namespace: str, *memories: str) -> None:
        self.seeded.setdefault(namespace, []).extend(memories)

    def set_profile(self, namespace: str, static: list[str], dynamic: list[str]) -> None:
        self.profiles[namespace] = (static, dynamic)

    def calls_to(self, route: str) -> list[Call]:
        return [c for c in self.calls if c.route == route]

    async def __aenter__(self) -> FakeSupermemory:
        app = web.Application()
        app.router.add_post("/ns/{namespace}/document", self._document)
        app.router.add_post("/ns/{namespace}/search", self._search)
        app.router.add_post("/ns/{namespace}/profile", self._profile)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _enter(self, route: str, request: web.Request) -> tuple[str, dict[str, Any]] | web.Response:
        namespace = request.match_info["namespace"]
        try:
            body = await request.json()
        except (ValueError, json.JSONDecodeError):
            body = {}
        auth = request.headers.get("Authorization")
        self.calls.append(Call(route, namespace, body if isinstance(body, dict) else {}, auth))
        if auth != f"Bearer {self.api_key}":
            return web.json_response({"error": "Unauthorized", "details": "bad key"}, status=401)
        delay = self.hang.get(route)
        if delay:
            try:
                await asyncio.wait_for(self._stopping.wait(), timeout=delay)
            except TimeoutError:
                pass
        status = self.fail.get(route)
        if status:
            return web.json_response({"error": "Internal error", "details": "scripted"},
                                     status=status)
        return namespace, body if isinstance(body, dict) else {}

    async def _document(self, request: web.Request) -> web.Response:
        got = await self._enter("document", request)
        if isinstance(got, web.Response):
            return got
        namespace, body = got
        content = body.get("content")
        if not isinstance(content, str) or not content:
            return web.json_response({"error": "Bad request", "details": "content"}, status=400)
        doc_id = body.get("id") or uuid.uuid4().hex
        docs = self.docs.setdefault(namespace, {})
        doc = docs.get(doc_id)
        if doc is None:
            docs[doc_id] = _Doc(doc_id, content, dict(body.get("metadata") or {}))
        else:
            doc.content += "\n\n" + content
        return web.json_response({"id": doc_id, "status": "queued"})

    async def _search(self, request: web.Request) -> web.Response:
        got = await self._enter("search", request)
        if isinstance(got, web.Response):
            return got
        namespace, body = got
        limit = int(body.get("limit") or 10)
        memories = [*self.seeded.get(namespace, ()),
                    *(d.content for d in self.docs.get(namespace, {}).values())]
        results = [{
            "id": f"mem_{i}", "memory": text, "metadata": {}, "similarity": 0.9 - i / 100,
            "isLatest": True, "isInference": False, "system": {"updatedAt": _NOW},
        } for i, text in enumerate(memories[:limit])]
        return web.json_response({"results": results, "searchTime": 1.5})

    async def _profile(self, request: web.Request) -> web.Response:
        got = await self._enter("profile", request)
        if isinstance(got, web.Response):
            return got
        namespace, _ = got
        static, dynamic = self.profiles.get(namespace, ([], []))
        return web.json_response({"profile": {
            "static": [{"id": f"s{i}", "memory": m} for i, m in enumerate(static)],
            "dynamic": [{"id": f"d{i}", "memory": m} for i, m in enumerate(dynamic)],
            "buckets": {},
        }})
