"""The dashboard in a real browser (headless Chromium), as an operator uses it: log in with
the token, watch a session appear after a chat message through the api adapter, search it,
open its lineage after /compress, approve a pairing code and see the user get in."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from openai import AsyncOpenAI

from adapters.fake import FakeAdapter
from gateway.runner import GatewayRunner
from tests.dashboard.conftest import API_KEY, SHOTS, TOKEN
from tests.fakes.openai_server import FakeOpenAIServer, Reply

pytestmark = pytest.mark.timeout(120)


async def _shot(page: Any, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


#: True once the overview says sessions are stored and today's input bar has a height.
TODAY_CHARTED = """() => {
  const n = document.querySelector('#total-sessions');
  const bars = document.querySelectorAll('svg.chart rect.in');
  const today = bars[bars.length - 1];
  return n && Number(n.textContent) > 0 && today && Number(today.getAttribute('height')) > 0;
}"""


async def _tokens(runner: GatewayRunner) -> bool:
    rows = await runner.store.list_sessions(limit=5)
    return any(r.input_tokens > 0 for r in rows)


async def _until(check: Callable[[], Awaitable[bool]], what: str, timeout_s: float = 10) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def _say(client: AsyncOpenAI, text: str, session: str = "zebra-talk") -> str:
    r = await client.chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": text}], user=session)
    return r.choices[0].message.content or ""


async def test_operator_walkthrough(gateway: tuple[GatewayRunner, FakeAdapter],
                                    model: FakeOpenAIServer, browser: Any) -> None:
    runner, fake = gateway
    assert runner.dashboard is not None
    base = runner.dashboard.url.rstrip("/")
    bound = runner.adapters["api"].listening()
    assert bound is not None
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{bound[1]}/v1", api_key=API_KEY,
                         max_retries=0, timeout=30)
    page = await (await browser.new_context(viewport={"width": 1200, "height": 860})).new_page()

    # Log in: a wrong token is refused, the right one opens the overview.
    await page.goto(base + "/sessions")
    assert page.url.endswith("/login")
    await _shot(page, "login")
    await page.fill("#token", "not-the-token")
    await page.click("button[type=submit]")
    assert "That token is not right" in await page.inner_text("main")
    await page.fill("#token", TOKEN)
    await page.click("button[type=submit]")
    await page.wait_for_url(base + "/")
    overview = await page.inner_text("main")
    assert "Adapters" in overview and "api" in overview and "connected" in overview

    # A chat message through the api adapter: the open sessions page shows it without reload.
    await page.goto(base + "/sessions")
    assert "No sessions yet." in await page.inner_text("#live")
    model.enqueue(Reply(text="Zebras migrate with the rains."))
    assert await _say(client, "where do zebras go in the dry season?") == \
        "Zebras migrate with the rains."
    await page.wait_for_selector("#live td:has-text('api')", timeout=15_000)
    assert "No sessions yet." not in await page.inner_text("#live")
    await _shot(page, "sessions")

    # The overview read its totals (none) at the login a moment ago; once the turn's usage
    # is in state.db the overview counts the session and charts today's tokens.
    stored = await runner.store.list_sessions(limit=5)
    await _until(lambda: _tokens(runner), "the turn's usage in state.db")
    await page.goto(base + "/")
    await page.wait_for_function(TODAY_CHARTED, timeout=5_000)
    assert int(await page.inner_text("#total-sessions")) == len(stored) == 1
    today = page.locator("svg.chart rect.in").last
    assert float(await today.get_attribute("height") or 0) > 0
    box = await today.bounding_box()
    assert box is not None and box["height"] > 0

    # Search it (the same FTS search as `hermes sessions search`).
    await page.goto(base + "/sessions")
    await page.fill("#q", "zebras")
    await page.click("form[role=search] button")
    hits = await page.inner_text("#live")
    assert "match “zebras”" in hits and "dry season" in hits
    await _shot(page, "search")

    # /compress rotates the session; its page shows the lineage, the compression marked.
    for i in range(3):
        await _say(client, f"tell me more, part {i}")
    model.enqueue(Reply(text="## Goal\nLearn where zebras go in the dry season.\n"
                              "## Completed Actions\n1. Explained the migration."))
    done = await _say(client, "/compress")
    assert "Compressed" in done, done
    await page.goto(base + "/sessions")
    await page.click("#live tr:has(.tag) a")  # the child (tagged with its lineage kind)
    lineage = await page.inner_text("section[aria-labelledby=h-lineage]")
    assert "compressed ↓" in lineage and "compression child" in lineage
    await _shot(page, "session")
    await page.click("section[aria-labelledby=h-lineage] li a >> nth=0")
    assert "compression" in await page.inner_text("section[aria-labelledby=h-lineage]")
    text = await page.inner_text("ol.transcript")
    assert "where do zebras go in the dry season?" in text

    # Pairing: a stranger asks, the operator types the code the bot gave them, they get in.
    await fake.inject("hello bot", chat_id="c9", user_id="u9", user_name="Nine")
    await fake.wait_for(lambda: any("hermes pairing approve" in m
                                    for m in fake.messages("c9")), 10)
    code = re.search(r"approve fake (\S+)", fake.messages("c9")[-1])
    assert code is not None
    await page.goto(base + "/pairing")
    row = page.locator("tr:has-text('u9')")
    await row.locator("input[name=code]").fill(code.group(1))
    await _shot(page, "pairing")
    await row.locator("button").click()
    assert "Approved Nine on fake." in await page.inner_text("main")
    assert "Nine" in await page.inner_text("section[aria-labelledby=h-approved]")
    model.enqueue(Reply(text="Welcome in, Nine."))
    before = len(model.requests)
    await fake.inject("may I talk now?", chat_id="c9", user_id="u9", user_name="Nine")
    await fake.wait_for(lambda: "Welcome in, Nine." in fake.messages("c9"), 10)
    assert len(model.requests) == before + 1

    # The live overview shows the usage chart (today's bar up) and the compression outcome.
    await page.goto(base + "/")
    await page.wait_for_function(TODAY_CHARTED, timeout=5_000)
    assert "compressed: 1" in await page.inner_text("#live")
    assert await page.locator("svg.chart rect.in").count() == 14
    assert int(await page.inner_text("#total-sessions")) == len(
        await runner.store.list_sessions(limit=50)) >= 3
    await _shot(page, "overview")

    # Revoke: the user is out again.
    await page.goto(base + "/pairing")
    await page.click("button:has-text('Revoke')")
    assert "Revoked u9 on fake." in await page.inner_text("main")
    await client.close()


async def test_every_page_reads_without_javascript(
        gateway: tuple[GatewayRunner, FakeAdapter], model: FakeOpenAIServer,
        browser: Any) -> None:
    """A browser with JavaScript off: log in, read the overview, the sessions list and a
    transcript (the live refresh is the only thing missing: a reload shows what is new)."""
    runner, fake = gateway
    assert runner.dashboard is not None
    base = runner.dashboard.url.rstrip("/")
    context = await browser.new_context(java_script_enabled=False)
    page = await context.new_page()
    await page.goto(base + "/")
    assert page.url.endswith("/login")
    await page.fill("#token", TOKEN)
    await page.click("button[type=submit]")
    await page.wait_for_url(base + "/")
    overview = await page.inner_text("main")
    assert "Adapters" in overview and "connected" in overview
    assert await page.inner_text("#total-sessions") == "0"

    await page.goto(base + "/sessions")
    assert "No sessions yet." in await page.inner_text("#live")
    model.enqueue(Reply(text="Okapis live in the Ituri forest."))
    await fake.inject("where do okapis live?", chat_id="c1", user_id="u1")
    await fake.wait_turns(1, timeout_s=15)
    await _until(lambda: _tokens(runner), "the turn's usage in state.db")
    await asyncio.sleep(2.5)  # two polls' worth: nothing refreshes the page without a script
    assert "No sessions yet." in await page.inner_text("#live")
    assert await page.get_attribute("#live", "data-updated") is None

    await page.reload()
    await page.click("#live td a")
    assert "/sessions/" in page.url
    transcript = await page.inner_text("ol.transcript")
    assert "where do okapis live?" in transcript
    assert "Okapis live in the Ituri forest." in transcript
    await page.goto(base + "/")
    assert await page.inner_text("#total-sessions") == "1"
    today = page.locator("svg.chart rect.in").last
    assert float(await today.get_attribute("height") or 0) > 0
    await context.close()


async def test_forms_need_the_csrf_token_and_pages_escape(
        gateway: tuple[GatewayRunner, FakeAdapter], model: FakeOpenAIServer) -> None:
    runner, fake = gateway
    assert runner.dashboard is not None
    base = runner.dashboard.url.rstrip("/")
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        r = await http.get(base + "/", allow_redirects=False)
        assert r.status == 303 and r.headers["Location"] == "/login"
        assert (await http.get(base + "/fragment/overview")).status == 401
        r = await http.post(base + "/login", data={"token": TOKEN}, allow_redirects=False)
        assert r.status == 303
        page = await (await http.get(base + "/pairing")).text()
        assert "default-src 'none'" in (await http.get(base + "/")).headers[
            "Content-Security-Policy"]
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None
        r = await http.post(base + "/pairing/revoke", data={"platform": "fake",
                                                            "user_id": "u1"})
        assert r.status == 403                              # no CSRF token: refused
        r = await http.post(base + "/pairing/revoke", data={
            "platform": "fake", "user_id": "u1", "csrf": csrf.group(1)})
        assert r.status == 400 and "Not an approved user." in await r.text()

        model.enqueue(Reply(text="<script>alert(1)</script> **hi**"))
        await fake.inject("<img src=x onerror=alert(2)>", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: bool(fake.turns_completed), 10)
        s = await runner.store.find_by_session_key("fake:dm:c1")
        assert s is not None
        html = await (await http.get(f"{base}/sessions/{s.id}")).text()
        assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
        assert "<img src=x" not in html
        export = await http.get(f"{base}/sessions/{s.id}/export")
        assert export.status == 200 and "onerror=alert(2)" in await export.text()
        assert TOKEN not in html and "sk-test-key-1" not in html
