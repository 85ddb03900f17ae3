"""Approvals through the API adapter: the waiting request's answer carries the question, and
a second request of the same user in the same conversation answers `/approve` (or another
key's user is refused)."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

from openai import AsyncOpenAI

from adapters.api.adapter import ApiAdapter
from storage.ports import ApprovalLedger
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.gateway.runtime_harness import runner_for
from tests.multiuser.support import tool_results

KEY_A = "sk-alice-0123456789abcdef"
KEY_B = "sk-bob-fedcba9876543210"


async def _ask(client: AsyncOpenAI, text_: str) -> str:
    resp = await client.chat.completions.create(
        model="hermes-agent", user="ops", messages=[{"role": "user", "content": text_}])
    return resp.choices[0].message.content or ""


async def test_the_api_user_approves_in_a_second_request(tmp_path: Path,
                                                         model: FakeOpenAIServer) -> None:
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY_A, KEY_B]})
    model.enqueue(tool_calls(call("terminal", {"command": "chmod 777 . && echo opened"})),
                  text("Opened the folder."))
    async with runner_for(tmp_path, model, adapters={"api": adapter},
                          compression__enabled=False, tools__terminal__enabled=True) as (
            runner, _):
        base = f"http://127.0.0.1:{adapter.port}/v1"
        a = AsyncOpenAI(base_url=base, api_key=KEY_A, max_retries=0, timeout=30)
        b = AsyncOpenAI(base_url=base, api_key=KEY_B, max_retries=0, timeout=30)
        try:
            waiting = asyncio.create_task(_ask(a, "open the workspace folder to everyone"))
            assert runner.parts is not None
            store = runner.parts.store
            await until_asked(store)
            other = await _ask(b, "/approve")
            mine = await _ask(a, "/approve")
            answer = await asyncio.wait_for(waiting, 20)
            rows = await store.list_approvals()
        finally:
            await a.close()
            await b.close()
    assert other == "Nothing is waiting for approval here."  # B's conversation is its own
    assert mine.startswith("✅ Approved: running it now")
    assert "⚠️ Approval needed (a permission or ownership change)" in answer
    assert answer.endswith("Opened the folder.")
    assert tool_results(model.requests[1])[-1].startswith("[terminal: exit code 0")
    assert [(r.status, r.platform) for r in rows] == [("approved", "api")]
    workspace = Path(runner.parts.agents.spaces.workspace_root)
    assert any(stat.S_IMODE(p.stat().st_mode) == 0o777 for p in workspace.rglob("*")
               if p.is_dir())


async def until_asked(store: ApprovalLedger) -> None:
    for _ in range(500):
        if [r for r in await store.list_approvals() if r.status == "pending"]:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("no approval was requested")
