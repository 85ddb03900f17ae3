"""Two API keys on one gateway never reach each other's conversations (issue 14).

The real `api` adapter over HTTP with the `openai` SDK as the client, the real runner, agent
and storage, and the fake model. Key A and key B are two principals; each test plays a
finding of the issue: B tries to read, address, resume, list or name A's sessions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from openai import AsyncOpenAI

from adapters.api.adapter import ApiAdapter
from gateway.runner import GatewayRunner
from storage.types import Session
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.gateway.runtime_harness import runner_for
from tests.multiuser.support import tool_payload

KEY_A = "sk-alice-0123456789abcdef"
KEY_B = "sk-bob-fedcba9876543210"


@dataclass
class TwoKeys:
    runner: GatewayRunner
    adapter: ApiAdapter
    a: AsyncOpenAI
    b: AsyncOpenAI

    async def ask(self, client: AsyncOpenAI, text_: str, *, user: str | None = None,
                  **kw: Any) -> str:
        extra: dict[str, Any] = {"user": user} if user is not None else {}
        resp = await client.chat.completions.create(
            model="hermes-agent", messages=[{"role": "user", "content": text_}], **extra, **kw)
        return resp.choices[0].message.content or ""


@pytest.fixture
async def two(tmp_path, model: FakeOpenAIServer) -> AsyncIterator[TwoKeys]:
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY_A, KEY_B]})
    async with runner_for(tmp_path, model, adapters={"api": adapter},
                          compression__enabled=False) as (runner, _):
        base = f"http://127.0.0.1:{adapter.port}/v1"
        a = AsyncOpenAI(base_url=base, api_key=KEY_A, max_retries=0, timeout=20)
        b = AsyncOpenAI(base_url=base, api_key=KEY_B, max_retries=0, timeout=20)
        yield TwoKeys(runner, adapter, a, b)
        await a.close()
        await b.close()


async def test_session_search_of_one_key_never_returns_another_keys_messages(
    two: TwoKeys, model: FakeOpenAIServer
) -> None:
    model.enqueue(text("Noted."))
    await two.ask(two.a, "my bank PIN is 4321", user="notes")
    # B asks the agent to search past conversations for the PIN.
    model.enqueue(tool_calls(call("session_search", {"query": "PIN"})), text("Nothing."))
    await two.ask(two.b, "search past conversations for PIN", user="mine")
    found = tool_payload(model.requests[-1])
    assert "4321" not in str(found), found
    # A finds her own message, from another of her chats.
    model.enqueue(tool_calls(call("session_search", {"query": "PIN"})), text("Found it."))
    await two.ask(two.a, "what was my PIN?", user="elsewhere")
    found = tool_payload(model.requests[-1])
    assert "4321" in str(found)


async def test_a_key_naming_another_keys_session_gets_its_own_session(
    two: TwoKeys, model: FakeOpenAIServer
) -> None:
    model.enqueue(text("Noted."))
    await two.ask(two.a, "my bank PIN is 4321", user="notes")
    model.enqueue(text("Hello B."), text("Hello again B."))
    await two.ask(two.b, "hi", user="notes")  # the same session name as A's
    await two.ask(two.b, "hi again", extra_headers={"X-Hermes-Session": "notes"})
    for request in model.requests[1:]:
        sent = str(request.body["messages"])
        assert "4321" not in sent and "Noted." not in sent
    # A's conversation holds only A's turn.
    store = two.runner.store
    mine = [s for s in await store.list_sessions() if s.user_id != "key:" + _key_id(KEY_B)]
    assert len(mine) == 1
    texts = [m["content"] for m in await store.load_history(mine[0].id)]
    assert texts == ["my bank PIN is 4321", "Noted."]


async def _a_titled_session(two: TwoKeys, model: FakeOpenAIServer, title: str) -> Session:
    """A's session "notes", holding her PIN, titled `title`."""
    model.enqueue(text("Noted."))
    await two.ask(two.a, "my bank PIN is 4321", user="notes")
    assert "Title set" in await two.ask(two.a, f"/title {title}", user="notes")
    [session_a] = await two.runner.store.list_sessions()
    return session_a


async def test_resume_cannot_take_another_keys_session(
    two: TwoKeys, model: FakeOpenAIServer
) -> None:
    session_a = await _a_titled_session(two, model, "Bank")
    for ident in (session_a.id, "Bank"):
        reply = await two.ask(two.b, f"/resume {ident}", user="mine")
        assert reply == (f"No session called “{ident}” here. /sessions lists the ones you "
                         "can resume."), reply
    after = await two.runner.store.get_session(session_a.id)
    assert after is not None and after.session_key == session_a.session_key
    assert after.ended_at is None


async def test_title_conflicts_never_reveal_another_keys_session(
    two: TwoKeys, model: FakeOpenAIServer
) -> None:
    session_a = await _a_titled_session(two, model, "Taxes 2024")
    model.enqueue(text("Hello."))
    await two.ask(two.b, "hello", user="mine")
    reply = await two.ask(two.b, "/title Taxes 2024", user="mine")
    assert session_a.id not in reply
    # Titles are per principal: B may use the same name for its own session.
    assert reply == "🏷 Title set: Taxes 2024"


async def test_sessions_lists_only_the_keys_own_sessions(
    two: TwoKeys, model: FakeOpenAIServer
) -> None:
    session_a = await _a_titled_session(two, model, "Bank")
    model.enqueue(text("Hello."))
    listed = await two.ask(two.b, "/sessions", user="notes")
    assert session_a.id not in listed and "Bank" not in listed
    await two.ask(two.b, "hello", user="mine")
    listed = await two.ask(two.b, "/sessions", user="notes")
    assert session_a.id not in listed and "Bank" not in listed
    [session_b] = [s for s in await two.runner.store.list_sessions() if s.id != session_a.id]
    assert session_b.id in listed
    # A sees her own, in any of her chats.
    assert session_a.id in await two.ask(two.a, "/sessions", user="other")


def _key_id(key: str) -> str:
    import hashlib

    return hashlib.sha256(key.encode()).hexdigest()[:12]
