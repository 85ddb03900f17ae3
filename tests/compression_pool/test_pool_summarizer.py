"""`AuxSummarizer`: the auxiliary model through the openai SDK, errors split transient/permanent."""

from __future__ import annotations

import pytest

from agent_core.compression import SummarizerError
from agent_core.provider import ProviderSettings
from gateway.compression import AuxSummarizer
from tests.fakes.openai_server import (
    ErrorReply,
    FakeOpenAIServer,
    hang,
    insufficient_quota,
    invalid_api_key,
    payment_required,
    rate_limited,
    server_error,
    text,
)

KEY = "sk-aux-secret-000111222333"
PROMPT = [{"role": "system", "content": "summarize"}, {"role": "user", "content": "turns"}]


def _summarizer(server: FakeOpenAIServer, keys: list[str] | None = None,
                timeout_s: float = 10) -> AuxSummarizer:
    return AuxSummarizer(ProviderSettings(
        name="aux", base_url=server.base_url, api_keys=keys or [KEY], model="sum-model",
        timeout_s=timeout_s))


async def test_summary_text_comes_back_and_the_budget_is_sent(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(text("## Goal\nship it"))
    s = _summarizer(fake_openai)
    try:
        assert await s.summarize(PROMPT, max_tokens=900) == "## Goal\nship it"
    finally:
        await s.aclose()
    body = fake_openai.requests[0].body
    assert body["model"] == "sum-model" and body["max_tokens"] == 900
    assert body["messages"] == PROMPT


@pytest.mark.parametrize(
    ("script", "kind"),
    [
        (rate_limited(), "transient"),
        (server_error(502), "transient"),
        (invalid_api_key(), "permanent"),
        (payment_required(), "permanent"),
        (insufficient_quota(), "permanent"),
        (ErrorReply(403, {"error": {"message": "forbidden"}}), "permanent"),
    ],
)
async def test_errors_are_classified(
    fake_openai: FakeOpenAIServer, script: ErrorReply, kind: str
) -> None:
    fake_openai.enqueue(script)
    s = _summarizer(fake_openai)
    try:
        with pytest.raises(SummarizerError) as info:
            await s.summarize(PROMPT, max_tokens=100)
    finally:
        await s.aclose()
    assert info.value.kind == kind
    assert KEY not in str(info.value)


async def test_a_timeout_is_transient(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(hang(5))
    s = _summarizer(fake_openai, timeout_s=0.3)
    try:
        with pytest.raises(SummarizerError) as info:
            await s.summarize(PROMPT, max_tokens=100)
    finally:
        await s.aclose()
    assert info.value.kind == "transient"


async def test_a_rejected_key_falls_over_to_the_next(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(invalid_api_key(revoked=True), text("summary"))
    s = _summarizer(fake_openai, keys=[KEY, "sk-aux-second-999888777"])
    try:
        assert await s.summarize(PROMPT, max_tokens=100) == "summary"
    finally:
        await s.aclose()
    assert fake_openai.keys_used() == [KEY, "sk-aux-second-999888777"]
