"""`web_extract` against local pages: clean markdown, limits, condensing by the auxiliary model,
and the SSRF rules (refused before any connection; every redirect hop checked)."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from pydantic import SecretStr

from agent_core.provider import ProviderSettings
from agent_core.tools.base import ToolCall, ToolContext, ToolOutcome
from agent_core.tools.builtin.web_extract import WebFetchSettings, web_extract_tool
from agent_core.tools.registry import ToolRegistry
from agent_core.web.netguard import AddressPolicy, BlockedAddress, FetchLimits, guarded_session
from gateway.compression.summarizer import AuxSummarizer
from tests.fakes.openai_server import FakeOpenAIServer, server_error, text
from tests.fakes.web_server import FakeWebServer, Page

ARTICLE = """<html><head><title>Harbour news</title><script>var tracking = "NOISE";</script>
<style>.x{color:red}</style></head><body>
<nav><a href="/">Home</a> <a href="/sport">Sport</a></nav>
<article><h1>Ferry timetable changes</h1>
<p>From Monday the morning ferry leaves at 07:45 instead of 07:30, the harbour office said.</p>
<p>The evening ferry keeps its 18:10 departure. Details are on the
<a href="https://harbour.example/timetable">timetable page</a>.</p>
<ul><li>Weekdays: 07:45</li><li>Saturdays: 09:00</li></ul>
</article><footer>Copyright Harbour Gazette</footer></body></html>"""


def settings(*allow: str, **kw: Any) -> WebFetchSettings:
    limits = kw.pop("limits", FetchLimits(timeout_s=5.0))
    return WebFetchSettings(policy=AddressPolicy.of(allow), limits=limits, **kw)


async def extract(st: WebFetchSettings, *urls: str, tmp: Path) -> ToolOutcome:
    reg = ToolRegistry([web_extract_tool(st)])
    (out,) = await reg.execute([ToolCall("c1", "web_extract", json.dumps({"urls": list(urls)}))],
                               ToolContext(workspace=tmp))
    return out


async def test_allow_listed_page_comes_back_as_clean_markdown(tmp_path: Path) -> None:
    async with FakeWebServer() as site:
        site.pages["/news"] = Page(ARTICLE)
        out = await extract(settings("127.0.0.1"), f"{site.base_url}/news", tmp=tmp_path)
    assert out.ok, out.content
    (res,) = json.loads(out.content)["results"]
    assert res["title"] == "Harbour news"
    body = res["content"]
    assert "# Ferry timetable changes" in body and "07:45 instead of 07:30" in body
    assert "[timetable page](https://harbour.example/timetable)" in body
    assert "NOISE" not in body and "color:red" not in body
    assert site.requests[0][0] == "GET"


async def test_loopback_url_not_allow_listed_is_refused_without_a_connection(tmp_path: Path) -> None:
    async with FakeWebServer() as site:
        site.pages["/"] = Page(ARTICLE)
        for url in (f"{site.base_url}/", f"http://localhost:{site.port}/",
                    f"http://[::ffff:127.0.0.1]:{site.port}/", f"http://0.0.0.0:{site.port}/",
                    f"http://2130706433:{site.port}/"):
            out = await extract(settings(), url, tmp=tmp_path)
            assert not out.ok, url
            assert ("address" in out.content or "not a valid URL" in out.content), out.content
        assert site.requests == []
    assert "loopback" in (await extract(settings(), "http://127.0.0.1:9/", tmp=tmp_path)).content


async def test_a_redirect_to_a_private_address_is_refused(tmp_path: Path) -> None:
    async with FakeWebServer() as public, FakeWebServer(host="127.0.0.2") as private:
        private.pages["/secret"] = Page("<html><body><p>internal admin data</p></body></html>")
        public.pages["/go"] = Page(status=302, headers={"Location": f"{private.base_url}/secret"})
        public.pages["/meta"] = Page(
            status=307, headers={"Location": "http://169.254.169.254/latest/meta-data/"})
        # Only the first server is allow-listed (as a /32): the hop to 127.0.0.2 is refused.
        st = settings("127.0.0.1/32", "169.254.0.0/16")
        out = await extract(st, f"{public.base_url}/go", tmp=tmp_path)
        assert not out.ok and "127.0.0.2 is a loopback address" in out.content
        assert private.requests == []
        out = await extract(st, f"{public.base_url}/meta", tmp=tmp_path)
        assert not out.ok and "metadata" in out.content
        assert [r[1] for r in public.requests] == ["/go", "/meta"]
        # Allow-list both and the same redirect is followed.
        out = await extract(settings("127.0.0.0/8"), f"{public.base_url}/go", tmp=tmp_path)
        assert out.ok and "internal admin data" in out.content
        assert json.loads(out.content)["results"][0]["requested_url"] == f"{public.base_url}/go"


class MapResolver(AbstractResolver):
    """A DNS stand-in: fixed answers per name (a rebinding attacker's server, in effect)."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        self.asked.append(host)
        return [{"hostname": host, "host": self.answers[host], "port": port,
                 "family": socket.AF_INET, "proto": 0, "flags": socket.AI_NUMERICHOST}]

    async def close(self) -> None:
        return None


async def test_names_are_checked_after_resolution(tmp_path: Path) -> None:
    async with FakeWebServer() as site:
        site.pages["/p"] = Page(ARTICLE)
        dns = MapResolver({"news.example": "127.0.0.1", "wiki.internal": "127.0.0.1"})
        st = settings("wiki.internal", resolver=dns)
        out = await extract(st, f"http://news.example:{site.port}/p", tmp=tmp_path)
        assert not out.ok and "news.example resolves to a loopback address" in out.content
        assert site.requests == []
        out = await extract(st, f"http://wiki.internal:{site.port}/p", tmp=tmp_path)
        assert out.ok and "07:45" in out.content
        assert dns.asked == ["news.example", "wiki.internal"]


async def test_metadata_address_is_refused_even_when_allow_listed(tmp_path: Path) -> None:
    out = await extract(settings("169.254.0.0/16"), "http://169.254.169.254/latest/", tmp=tmp_path)
    assert not out.ok and "metadata" in out.content


async def test_size_and_time_limits(tmp_path: Path) -> None:
    async with FakeWebServer() as site:
        site.pages["/big"] = Page("<html><body>" + "<p>x</p>" * 5000 + "</body></html>")
        site.pages["/slow"] = Page(ARTICLE, gate=asyncio.Event())
        st = settings("127.0.0.1", limits=FetchLimits(timeout_s=0.5, max_bytes=10_000))
        out = await extract(st, f"{site.base_url}/big", tmp=tmp_path)
        assert not out.ok and "too large" in out.content
        out = await extract(st, f"{site.base_url}/slow", tmp=tmp_path)
        assert not out.ok and "timed out after 0.5s" in out.content
        site.pages["/slow"].gate.set()  # type: ignore[union-attr]


def long_page(n: int = 400) -> str:
    paras = "".join(f"<p>Paragraph {i}: the council discussed item {i} at length.</p>"
                    for i in range(n))
    return f"<html><head><title>Minutes</title></head><body><article><h1>Minutes</h1>{paras}</article></body></html>"


async def test_long_pages_are_condensed_by_the_auxiliary_model_with_the_source_kept(
        tmp_path: Path) -> None:
    async with FakeWebServer() as site, FakeOpenAIServer() as model:
        site.pages["/minutes"] = Page(long_page())
        model.enqueue(text("The council discussed 400 items; item 7 was the budget."))
        aux = AuxSummarizer(ProviderSettings(name="aux", base_url=model.base_url, model="aux-m",
                                             api_keys=[SecretStr("sk-aux")], streaming=False))
        try:
            st = settings("127.0.0.1", max_chars=2_000, condenser=aux)
            url = f"{site.base_url}/minutes"
            out = await extract(st, url, tmp=tmp_path)
        finally:
            await aux.aclose()
        assert out.ok, out.content
        (res,) = json.loads(out.content)["results"]
        assert res["condensed"] is True
        assert res["content"].startswith(f"Source: {url}\n")
        assert "item 7 was the budget" in res["content"]
        (req,) = model.requests
        assert req.body["model"] == "aux-m"
        user = req.messages[-1]["content"]
        assert user.startswith(f"Source: {url}") and "Paragraph 399" in user

        model.enqueue(server_error(500), server_error(500), server_error(500))
        aux = AuxSummarizer(ProviderSettings(name="aux", base_url=model.base_url, model="aux-m",
                                             api_keys=[SecretStr("sk-aux")], streaming=False))
        try:
            out = await extract(settings("127.0.0.1", max_chars=2_000, condenser=aux), url,
                                tmp=tmp_path)
        finally:
            await aux.aclose()
        (res,) = json.loads(out.content)["results"]
        assert res["truncated"] is True and "characters omitted" in res["content"]
        assert "Paragraph 0" in res["content"] and "Paragraph 399" in res["content"]


async def test_two_web_extract_calls_of_one_batch_run_in_parallel(tmp_path: Path) -> None:
    """Each page answers only once both requests have arrived: run one after the other, the
    first would time out."""
    async with FakeWebServer() as site:
        gate = asyncio.Event()
        site.pages["/a"] = Page(ARTICLE, gate=gate)
        site.pages["/b"] = Page(ARTICLE.replace("Ferry", "Tram"), gate=gate)

        async def open_gate() -> None:
            while len(site.requests) < 2:
                await asyncio.sleep(0.01)
            gate.set()

        opener = asyncio.create_task(open_gate(), name="test:open-gate")
        reg = ToolRegistry([web_extract_tool(settings("127.0.0.1",
                                                      limits=FetchLimits(timeout_s=3.0)))])
        calls = [ToolCall(f"c{i}", "web_extract", json.dumps({"urls": [f"{site.base_url}/{p}"]}))
                 for i, p in enumerate("ab")]
        outs = await reg.execute(calls, ToolContext(workspace=tmp_path))
        opener.cancel()
        assert [o.ok for o in outs] == [True, True], [o.content for o in outs]
        assert "Tram timetable" in outs[1].content
        assert outs[1].started_at < outs[0].finished_at


async def test_a_large_page_is_read_to_its_end(tmp_path: Path) -> None:
    """The body arrives in many chunks; the text at its end must be there."""
    filler = "<script>var s = '" + "x" * 1_500_000 + "';</script>"
    page = f"<html><head>{filler}</head><body><article><h1>End</h1><p>The last line.</p></article></body></html>"
    async with FakeWebServer() as site:
        site.pages["/long"] = Page(page)
        out = await extract(settings("127.0.0.1"), f"{site.base_url}/long", tmp=tmp_path)
    assert out.ok and "The last line." in out.content, out.content[:300]


async def test_the_charset_of_the_response_is_honoured(tmp_path: Path) -> None:
    page = "<html><body><article><h1>Новости</h1><p>Паром отправляется в 07:45.</p></article></body></html>"
    async with FakeWebServer() as site:
        site.pages["/ru"] = Page(page.encode("windows-1251"),
                                 headers={"Content-Type": "text/html; charset=windows-1251"})
        out = await extract(settings("127.0.0.1"), f"{site.base_url}/ru", tmp=tmp_path)
    assert out.ok and "Паром отправляется в 07:45." in json.loads(out.content)["results"][0]["content"]


async def test_no_tcp_connection_is_made_to_a_refused_address(tmp_path: Path) -> None:
    """A raw listener counts accepted connections: the URL check, and on its own the
    connector's connect-time check (reached here by bypassing the URL check), refuse before
    any connection."""
    accepted: list[object] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer.get_extra_info("peername"))
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        out = await extract(settings(), f"http://127.0.0.1:{port}/", tmp=tmp_path)
        assert not out.ok and "loopback" in out.content
        async with guarded_session(AddressPolicy(), FetchLimits(timeout_s=2)) as session:
            try:
                await session.get(f"http://127.0.0.1:{port}/")
            except aiohttp.ClientConnectorError as exc:
                assert isinstance(exc.os_error, BlockedAddress)
            else:
                raise AssertionError("the guarded session connected to 127.0.0.1")
        await asyncio.sleep(0.05)
        assert accepted == []
        # The same listener is reachable when allow-listed (so the count above can fail).
        await extract(settings("127.0.0.1"), f"http://127.0.0.1:{port}/", tmp=tmp_path)
        await asyncio.sleep(0.05)
        assert accepted
    finally:
        server.close()
        await server.wait_closed()
