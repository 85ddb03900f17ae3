"""Web search backends: plain HTTP against a SearXNG instance, the Brave Search API or the
Tavily API. The backend's URL is the operator's (a self-hosted SearXNG is often on the LAN), so
it is not subject to the fetch address policy; the results' URLs are, when fetched.

A 429 or 503 whose `Retry-After` is short (at most `retry_after_max_s`) is retried once after
waiting; otherwise, and for any other failure, `SearchError` says what happened in words the
model can act on (never the key).
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import aiohttp

__all__ = ["SearchBackend", "SearchError", "SearchHit", "SearchSettings", "make_backend"]

BackendName = Literal["searxng", "brave", "tavily"]
DEFAULT_BASE = {"brave": "https://api.search.brave.com", "tavily": "https://api.tavily.com"}


class SearchError(Exception):
    """A search failed; the message is for the model (no secrets)."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    title: str
    url: str
    snippet: str


@dataclass(frozen=True, slots=True)
class SearchSettings:
    backend: BackendName
    base_url: str | None = None
    api_key: str | None = None
    timeout_s: float = 15.0
    retry_after_max_s: float = 5.0

    def usable(self) -> str | None:
        """Why the backend cannot be used, or None when it can."""
        if self.backend == "searxng" and not self.base_url:
            return "tools.web.search.base_url (the SearXNG instance) is not set"
        if self.backend in ("brave", "tavily") and not self.api_key:
            return f"tools.web.search.api_key is not set for {self.backend}"
        return None


class SearchBackend(Protocol):
    name: str

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        """Raises SearchError."""
        ...


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class _HttpBackend:
    name = "http"

    def __init__(self, settings: SearchSettings) -> None:
        self.s = settings
        self.base = (settings.base_url or DEFAULT_BASE.get(settings.backend, "")).rstrip("/")

    def _request(self, query: str, limit: int) -> tuple[str, str, dict[str, Any]]:
        raise NotImplementedError

    def _hits(self, data: Any) -> list[SearchHit]:
        raise NotImplementedError

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        method, path, kwargs = self._request(query, limit)
        timeout = aiohttp.ClientTimeout(total=self.s.timeout_s)
        try:
            async with aiohttp.ClientSession(timeout=timeout, trust_env=True) as session:
                for attempt in (1, 2):
                    async with session.request(method, self.base + path, **kwargs) as resp:
                        if resp.status in (429, 503):
                            wait = _retry_after(resp.headers.get("Retry-After"))
                            if attempt == 1 and wait is not None and wait <= self.s.retry_after_max_s:
                                await asyncio.sleep(wait)
                                continue
                            hint = f"; retry after {wait:.0f}s" if wait is not None else ""
                            raise SearchError(f"the {self.s.backend} search backend is rate-limited "
                                              f"or unavailable (HTTP {resp.status}{hint})")
                        if resp.status in (401, 403):
                            raise SearchError(f"the {self.s.backend} search backend refused the "
                                              f"request (HTTP {resp.status}): check the API key "
                                              "or the instance's allowed formats")
                        if resp.status >= 400:
                            raise SearchError(f"the {self.s.backend} search backend failed "
                                              f"(HTTP {resp.status})")
                        try:
                            data = await resp.json(content_type=None)
                        except ValueError:
                            raise SearchError(f"the {self.s.backend} search backend answered "
                                              "with something that is not JSON") from None
                        return self._hits(data)[:limit]
        except SearchError:
            raise
        except TimeoutError:
            raise SearchError(f"the {self.s.backend} search backend did not answer within "
                              f"{self.s.timeout_s:g}s") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise SearchError(f"the {self.s.backend} search backend is unreachable "
                              f"({type(exc).__name__})") from None
        raise SearchError(f"the {self.s.backend} search backend is rate-limited")


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _from(items: Any, snippet_key: str) -> list[SearchHit]:
    out: list[SearchHit] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and _str(item.get("url")):
            out.append(SearchHit(_str(item.get("title")), item["url"],
                                 _str(item.get(snippet_key))))
    return out


class SearxngBackend(_HttpBackend):
    """`GET /search?q=…&format=json` (the instance must allow the json format)."""

    name = "searxng"

    def _request(self, query: str, limit: int) -> tuple[str, str, dict[str, Any]]:
        headers = {"Accept": "application/json"}
        if self.s.api_key:
            headers["Authorization"] = f"Bearer {self.s.api_key}"
        return "GET", "/search", {"params": {"q": query, "format": "json"}, "headers": headers}

    def _hits(self, data: Any) -> list[SearchHit]:
        return _from(data.get("results") if isinstance(data, dict) else None, "content")


class BraveBackend(_HttpBackend):
    """`GET /res/v1/web/search?q=…&count=…` with `X-Subscription-Token`."""

    name = "brave"

    def _request(self, query: str, limit: int) -> tuple[str, str, dict[str, Any]]:
        return "GET", "/res/v1/web/search", {
            "params": {"q": query, "count": str(min(limit, 20))},
            "headers": {"Accept": "application/json", "X-Subscription-Token": self.s.api_key or ""},
        }

    def _hits(self, data: Any) -> list[SearchHit]:
        web = data.get("web") if isinstance(data, dict) else None
        return _from(web.get("results") if isinstance(web, dict) else None, "description")


class TavilyBackend(_HttpBackend):
    """`POST /search` with a bearer key and `{query, max_results}`."""

    name = "tavily"

    def _request(self, query: str, limit: int) -> tuple[str, str, dict[str, Any]]:
        return "POST", "/search", {
            "json": {"query": query, "max_results": min(limit, 20)},
            "headers": {"Authorization": f"Bearer {self.s.api_key or ''}"},
        }

    def _hits(self, data: Any) -> list[SearchHit]:
        return _from(data.get("results") if isinstance(data, dict) else None, "content")


def make_backend(settings: SearchSettings) -> SearchBackend:
    kinds: dict[str, type[_HttpBackend]] = {
        "searxng": SearxngBackend, "brave": BraveBackend, "tavily": TavilyBackend}
    return kinds[settings.backend](settings)
