"""What the dashboard's pages show, read over plain HTTP from the real gateway: the overview's
totals right after a turn, and a long session's page (the newest messages, how many are
left out, every message in the export)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import aiohttp
import pytest

from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.gateway.runtime_harness import runner_for

pytestmark = pytest.mark.timeout(60)


def _stored(page: str) -> int:
    found = re.search(r'id="total-sessions">(\d+)<', page)
    assert found, page[:2000]
    return int(found.group(1))


def _today_tokens(page: str) -> tuple[int, int]:
    """(input, output) of the chart's last bar (today), from its tooltip."""
    bars = re.findall(r"<title>\d{4}-\d\d-\d\d: (\d+) in, (\d+) out</title>", page)
    assert len(bars) == 14, page[:2000]
    return int(bars[-1][0]), int(bars[-1][1])


async def test_the_overview_counts_a_turn_as_soon_as_its_usage_is_stored(
        tmp_path: Path) -> None:
    async with FakeOpenAIServer() as model, \
            runner_for(tmp_path, model, dashboard__enabled=True) as (runner, fake):
        assert runner.dashboard is not None
        url = runner.dashboard.url
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            before = await (await http.get(url)).text()
            assert _stored(before) == 0 and _today_tokens(before) == (0, 0)
            model.enqueue(Reply(text="Hello there.", usage={
                "prompt_tokens": 321, "completion_tokens": 12, "total_tokens": 333}))
            await fake.inject("hi", chat_id="c1", user_id="u1")
            await fake.wait_turns(1, timeout_s=15)
            for _ in range(200):  # the usage write follows the reply
                rows = await runner.store.list_sessions(limit=5)
                if rows and rows[0].input_tokens:
                    break
                await asyncio.sleep(0.05)
            after = await (await http.get(url)).text()
            fragment = await (await http.get(url + "fragment/overview")).text()
    assert _stored(after) == 1 and _today_tokens(after) == (321, 12)
    assert _stored(fragment) == 1 and _today_tokens(fragment) == (321, 12)


async def test_a_long_session_shows_its_newest_messages_and_exports_all(
        tmp_path: Path) -> None:
    async with FakeOpenAIServer() as model, \
            runner_for(tmp_path, model, dashboard__enabled=True) as (runner, _):
        assert runner.dashboard is not None
        store = runner.store
        s = await store.create_session(source="fake", session_key="fake:dm:c7", chat_id="c7")
        await store.append_messages(s.id, [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"line number {i}"}
            for i in range(450)])
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            page = await (await http.get(f"{runner.dashboard.url}sessions/{s.id}")).text()
            export = await (await http.get(
                f"{runner.dashboard.url}sessions/{s.id}/export")).text()
    shown = re.findall(r"<pre>line number (\d+)</pre>", page)
    assert shown == [str(i) for i in range(250, 450)]
    assert "250 older message(s) not shown; the export has all." in page
    rows = [json.loads(line) for line in export.splitlines()]
    assert [r["content"] for r in rows] == [f"line number {i}" for i in range(450)]
