"""`web_search` through each backend against a local fake of its API, and the failures a
user would meet (rate limits, server errors, a wrong key)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agent_core.tools.base import ToolCall, ToolContext, ToolOutcome
from agent_core.tools.builtin.web_search import web_search_tool
from agent_core.tools.registry import ToolRegistry
from agent_core.web.search import SearchSettings, make_backend
from tests.fakes.web_server import FakeSearchServer

HITS = [("Harbour ferry times", "https://harbour.example/ferry", "Morning ferry at 07:45"),
        ("Tram works", "https://city.example/tram", "Line 4 closed"),
        ("Weather", "https://weather.example/", "Rain")]


async def search(st: SearchSettings, query: str, tmp: Path, limit: int = 2) -> ToolOutcome:
    reg = ToolRegistry([web_search_tool(make_backend(st))])
    (out,) = await reg.execute(
        [ToolCall("s1", "web_search", json.dumps({"query": query, "limit": limit}))],
        ToolContext(workspace=tmp))
    return out


@pytest.mark.parametrize("backend,key", [("searxng", None), ("brave", "BSA-test"),
                                         ("tavily", "tvly-test")])
async def test_each_backend_returns_titles_urls_and_snippets(backend: str, key: str | None,
                                                             tmp_path: Path) -> None:
    async with FakeSearchServer() as api:
        api.hits = HITS
        st = SearchSettings(backend, base_url=api.base_url, api_key=key)  # type: ignore[arg-type]
        out = await search(st, "ferry times", tmp_path)
    assert out.ok, out.content
    body = json.loads(out.content)
    assert body["results"] == [
        {"position": 1, "title": "Harbour ferry times", "url": "https://harbour.example/ferry",
         "snippet": "Morning ferry at 07:45"},
        {"position": 2, "title": "Tram works", "url": "https://city.example/tram",
         "snippet": "Line 4 closed"}]
    method, path, headers = api.requests[0]
    if backend == "searxng":
        assert method == "GET" and "format=json" in path and "q=ferry+times" in path
    elif backend == "brave":
        assert headers["X-Subscription-Token"] == "BSA-test" and "count=2" in path
    else:
        assert api.bodies == [{"query": "ferry times", "max_results": 2}]


async def test_a_short_retry_after_is_waited_for_once(tmp_path: Path) -> None:
    async with FakeSearchServer() as api:
        api.hits = HITS
        api.failures.append((429, {"Retry-After": "1"}))
        st = SearchSettings("searxng", base_url=api.base_url, retry_after_max_s=2)
        started = time.monotonic()
        out = await search(st, "ferry", tmp_path)
        waited = time.monotonic() - started
    assert out.ok and len(api.requests) == 2
    assert waited >= 0.9


@pytest.mark.parametrize("status,headers,expected", [
    (429, {"Retry-After": "120"}, "rate-limited or unavailable (HTTP 429; retry after 120s)"),
    (429, {}, "rate-limited or unavailable (HTTP 429)"),
    (500, {}, "failed (HTTP 500)"),
    (503, {"Retry-After": "3600"}, "HTTP 503; retry after 3600s"),
])
async def test_rate_limits_and_server_errors_are_clear_tool_errors(
        status: int, headers: dict[str, str], expected: str, tmp_path: Path) -> None:
    async with FakeSearchServer() as api:
        api.failures.extend([(status, headers)] * 2)
        st = SearchSettings("brave", base_url=api.base_url, api_key="BSA-secret-key")
        started = time.monotonic()
        out = await search(st, "ferry", tmp_path)
    assert not out.ok
    assert out.content.startswith("Error: web search failed: the brave search backend")
    assert expected in out.content and "BSA-secret-key" not in out.content
    assert len(api.requests) == 1 and time.monotonic() - started < 5


async def test_wrong_key_and_unreachable_backend(tmp_path: Path) -> None:
    async with FakeSearchServer() as api:
        st = SearchSettings("tavily", base_url=api.base_url, api_key="wrong")
        out = await search(st, "ferry", tmp_path)
        assert not out.ok and "refused the request (HTTP 401)" in out.content
        port = api.port
    out = await search(SearchSettings("searxng", base_url=f"http://127.0.0.1:{port}"),
                       "ferry", tmp_path)
    assert not out.ok and "unreachable" in out.content


def test_usable_says_what_is_missing() -> None:
    assert "base_url" in (SearchSettings("searxng").usable() or "")
    assert "api_key" in (SearchSettings("brave").usable() or "")
    assert SearchSettings("tavily", api_key="k").usable() is None
