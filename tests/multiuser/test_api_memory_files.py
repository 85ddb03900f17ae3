"""Per-user memory and workspaces between two API keys (issue 14): USER.md is per principal,
MEMORY.md per profile unless `memory.scope: user`, the workspace per principal unless
`workspace.shared: true`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI

from adapters.api.adapter import ApiAdapter
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.gateway.runtime_harness import runner_for
from tests.multiuser.support import system_prompt, tool_results

KEY_A = "sk-alice-0123456789abcdef"
KEY_B = "sk-bob-fedcba9876543210"


@asynccontextmanager
async def clients(home: Path, model: FakeOpenAIServer, **overrides: Any
                  ) -> AsyncIterator[tuple[AsyncOpenAI, AsyncOpenAI]]:
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY_A, KEY_B]})
    async with runner_for(home, model, adapters={"api": adapter}, compression__enabled=False,
                          **overrides):
        base = f"http://127.0.0.1:{adapter.port}/v1"
        a = AsyncOpenAI(base_url=base, api_key=KEY_A, max_retries=0, timeout=20)
        b = AsyncOpenAI(base_url=base, api_key=KEY_B, max_retries=0, timeout=20)
        try:
            yield a, b
        finally:
            await a.close()
            await b.close()


async def ask(client: AsyncOpenAI, text_: str, user: str) -> str:
    resp = await client.chat.completions.create(
        model="hermes-agent", user=user, messages=[{"role": "user", "content": text_}])
    return resp.choices[0].message.content or ""


def _remember(model: FakeOpenAIServer) -> None:
    model.enqueue(
        tool_calls(call("memory", {"action": "add", "target": "user",
                                   "content": "Prefers green tea"}),
                   call("memory", {"action": "add", "target": "memory",
                                   "content": "The build server runs Debian"})),
        text("Saved."))


async def test_user_md_is_per_principal_and_memory_md_per_profile(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    async with clients(tmp_path, model) as (a, b):
        _remember(model)
        await ask(a, "remember that I like green tea", "notes")
        assert all('"success": true' in r for r in tool_results(model.requests[-1]))
        model.enqueue(text("Hello B."), text("Hello again A."))
        await ask(b, "hello", "mine")
        prompt_b = system_prompt(model.requests[-1])
        await ask(a, "hello", "fresh")  # a new session of A
        prompt_a = system_prompt(model.requests[-1])
    assert "Prefers green tea" not in prompt_b
    assert "Prefers green tea" in prompt_a
    # The agent's own notes are shared by the profile (memory.scope: profile).
    assert "The build server runs Debian" in prompt_b
    assert "The build server runs Debian" in prompt_a


async def test_memory_scope_user_keeps_the_agents_notes_per_principal(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    async with clients(tmp_path, model, memory__scope="user") as (a, b):
        _remember(model)
        await ask(a, "remember that I like green tea", "notes")
        model.enqueue(text("Hello B."), text("Hello again A."))
        await ask(b, "hello", "mine")
        prompt_b = system_prompt(model.requests[-1])
        await ask(a, "hello", "fresh")
        prompt_a = system_prompt(model.requests[-1])
    assert "The build server runs Debian" not in prompt_b
    assert "The build server runs Debian" in prompt_a


async def _tool_turn(model: FakeOpenAIServer, client: AsyncOpenAI, user: str, tool: str,
                     **args: str) -> str:
    """One turn in which the model calls `tool(**args)`; returns the tool's result."""
    model.enqueue(tool_calls(call(tool, args)), text("Done."))
    await ask(client, f"please {tool}", user)
    return tool_results(model.requests[-1])[-1]


async def test_each_principal_has_its_own_workspace(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    async with clients(tmp_path, model) as (a, b):
        await _tool_turn(model, a, "notes", "write_file", path="diary.txt",
                         content="dear diary, secret")
        assert "secret" not in await _tool_turn(model, b, "mine", "read_file", path="diary.txt")
        assert "diary" not in await _tool_turn(model, b, "mine", "search_files", query="secret")
        assert "secret" in await _tool_turn(model, a, "notes", "read_file", path="diary.txt")


async def test_workspace_shared_true_gives_everyone_one_folder(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    async with clients(tmp_path, model, workspace__shared=True) as (a, b):
        await _tool_turn(model, a, "notes", "write_file", path="team.txt", content="shared plan")
        assert "shared plan" in await _tool_turn(model, b, "mine", "read_file", path="team.txt")
