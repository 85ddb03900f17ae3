"""Memory writes record who caused them (issue 17, per-user scope): each write made in a
user's turn appends `{action, file, principal, entry}` to the `.audit.jsonl` beside the file
it changed, so the profile's MEMORY.md log names each writer and a user's USER.md log stays
in that user's own folder."""

from __future__ import annotations

import json
from pathlib import Path

from openai import AsyncOpenAI

from adapters.api.adapter import ApiAdapter
from gateway.principals import folder_name
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.gateway.runtime_harness import runner_for

KEY_A = "sk-alice-0123456789abcdef"
KEY_B = "sk-bob-fedcba9876543210"


def _audit(folder: Path) -> list[dict[str, str]]:
    path = folder / ".audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_memory_writes_record_the_principal_of_the_turn(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY_A, KEY_B]})
    async with runner_for(tmp_path, model, adapters={"api": adapter},
                          compression__enabled=False) as (runner, _):
        base = f"http://127.0.0.1:{adapter.port}/v1"
        users = []
        for key, entry in ((KEY_A, "Prefers green tea"), (KEY_B, "Likes short answers")):
            model.enqueue(
                tool_calls(call("memory", {"action": "add", "target": "user",
                                           "content": entry}),
                           call("memory", {"action": "add", "target": "memory",
                                           "content": f"Deploys happen on Fridays ({entry})"})),
                text("Saved."))
            async with AsyncOpenAI(base_url=base, api_key=key, max_retries=0,
                                   timeout=20) as client:
                await client.chat.completions.create(
                    model="hermes-agent", user="notes",
                    messages=[{"role": "user", "content": "remember this"}])
            (session,) = [s for s in await runner.store.list_sessions(limit=10)
                          if s.user_id not in set(users)]
            assert session.user_id
            users.append(session.user_id)
        model.enqueue(tool_calls(call("memory", {"action": "remove", "target": "memory",
                                                 "old_text": "green tea"})), text("Removed."))
        async with AsyncOpenAI(base_url=base, api_key=KEY_B, max_retries=0,
                               timeout=20) as client:
            await client.chat.completions.create(
                model="hermes-agent", user="notes",
                messages=[{"role": "user", "content": "forget the old deploy note"}])

    alice, bob = (f"api:{u}" for u in users)
    assert alice != bob
    shared = _audit(tmp_path / "memories")  # MEMORY.md: one per profile
    assert [(a["action"], a["file"], a["principal"]) for a in shared] == [
        ("add", "MEMORY.md", alice), ("add", "MEMORY.md", bob), ("remove", "MEMORY.md", bob)]
    assert shared[0]["entry"] == "Deploys happen on Fridays (Prefers green tea)"
    assert shared[2]["entry"] == shared[0]["entry"]  # what bob's turn removed
    for user, who, entry in ((users[0], alice, "Prefers green tea"),
                             (users[1], bob, "Likes short answers")):
        own = _audit(tmp_path / "memories" / "users" / folder_name("api", user))
        assert [(a["action"], a["file"], a["principal"], a["entry"]) for a in own] == [
            ("add", "USER.md", who, entry)]
    assert "origin" not in shared[0]  # the user's own turn, not a background run
    assert KEY_A not in (tmp_path / "memories" / ".audit.jsonl").read_text()
