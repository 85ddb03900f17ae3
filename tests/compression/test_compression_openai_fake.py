"""End to end through the fake OpenAI server on 127.0.0.1: what the summarizer model receives,
and how HTTP failures map to the engine's outcomes. The adapter below is test-only; the
gateway has its own (`gateway/compression/summarizer.py`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest_asyncio

from agent_core.compression import CompressionSettings, ContextCompressor, SummarizerError
from tests.compression.compression_support import FIXED_NOW, conversation, roles_alternate
from tests.fakes.openai_server import FakeOpenAIServer, invalid_api_key, rate_limited, text


class OpenAISummarizer:
    def __init__(self, client: openai.AsyncOpenAI, model: str) -> None:
        self.client = client
        self.model = model

    async def summarize(self, messages: list[dict[str, Any]], *, max_tokens: int) -> str:
        try:
            resp = await self.client.chat.completions.create(
                model=self.model, messages=messages, max_tokens=max_tokens  # type: ignore[arg-type]
            )
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise SummarizerError("permanent", f"HTTP {exc.status_code}") from exc
        except (openai.RateLimitError, openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise SummarizerError("transient", type(exc).__name__) from exc
        return resp.choices[0].message.content or ""


@pytest_asyncio.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as s:
        yield s


def make_engine(server: FakeOpenAIServer, **settings: Any) -> ContextCompressor:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    return ContextCompressor(
        OpenAISummarizer(client, "aux-model"),
        context_length=32_000,
        settings=CompressionSettings(aux_context_length=16_000, **settings),
        clock=lambda: FIXED_NOW,
    )


async def test_compression_through_fake_openai_server(server: FakeOpenAIServer):
    server.enqueue(
        text("## Goal\nstage one done <think>hidden</think>"),
        text("## Goal\nFinish the release\n## Critical Context\npassword=swordfish99"),
    )
    msgs = conversation(40, 3000)
    msgs[5] = {**msgs[5], "content": "my token: ghp_abcdefghijklmnopqrstuvwxyz0123456789"}
    r = await make_engine(server, summarizer_chunk_tokens=4_000).compress(msgs)
    assert r.status == "compressed" and roles_alternate(r.messages)
    # the material (every one of ~150 turns at least as a one-liner) exceeds one call's
    # 4,000-token share: two staged calls
    assert len(server.requests) == 2 == r.summarizer_calls
    first, second = (req.body for req in server.requests)
    assert first["model"] == "aux-model" and first["max_tokens"] == r.details["summary_budget"]
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert "TURNS TO SUMMARIZE" in first["messages"][1]["content"]
    update = second["messages"][1]["content"]
    assert "PREVIOUS SUMMARY" in update and "stage one done" in update and "hidden" not in update
    assert "ghp_abcdefghijklmnopqrstuvwxyz" not in json.dumps([first, second])
    assert "Finish the release" in r.summary and "swordfish99" not in r.summary


async def test_compression_http_429_and_401_through_fake_server(server: FakeOpenAIServer):
    msgs = conversation(40, 3000)
    server.enqueue(rate_limited())
    eng = make_engine(server)
    r = await eng.compress(msgs)
    assert r.status == "failed" and "transient" in r.reason and r.guards.cooldown_until > FIXED_NOW
    server.enqueue(invalid_api_key())
    r2 = await eng.compress(msgs, force=True)
    assert r2.status == "failed" and "permanent" in r2.reason
    assert r2.messages == msgs
