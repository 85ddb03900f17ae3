"""A hostile pattern from the model cannot freeze the daemon (issue: `(a+)+$` through
`search_files` held the GIL for seconds and /healthz stopped answering)."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest

from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.integration.harness import gateway


@pytest.fixture
async def model():
    async with FakeOpenAIServer() as server:
        yield server


async def test_health_keeps_answering_while_the_worst_pattern_runs(tmp_path, model):
    trap = "\n".join("a" * 32 + "!" for _ in range(50))  # `re`: 2^32 steps per line
    model.enqueue(
        tool_calls(call("write_file", {"path": "trap.txt", "content": trap})),
        tool_calls(call("search_files", {"query": "(a+)+$", "regex": True,
                                         "pattern": "*.txt"})),
        text("searched"),
    )
    async with gateway(tmp_path, model) as (runner, fake):
        url = f"{runner.health.url}/healthz"
        worst = 0.0
        async with aiohttp.ClientSession() as http:
            await fake.inject("search my files", chat_id="c1", user_id="u1")
            deadline = time.monotonic() + 20
            while "searched" not in fake.messages("c1") and time.monotonic() < deadline:
                started = time.monotonic()
                async with http.get(url) as resp:
                    assert resp.status == 200
                worst = max(worst, time.monotonic() - started)
                await asyncio.sleep(0.01)
        assert fake.messages("c1")[-1] == "searched"
        # The tool answered (no match: the line ends in '!'), with the pattern run by RE2.
        result = [m for m in model.requests[2].body["messages"] if m["role"] == "tool"][-1]
        assert "No text" in result["content"]
        # `re` held the GIL for seconds; 1 s leaves room for a loaded CI machine (-n 4).
        assert worst < 1.0, f"/healthz took {worst * 1000:.0f} ms while the pattern ran"
