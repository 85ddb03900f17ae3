"""`platforms.api.api_keys` entries may be `{name, key}` (issue 14): each key is a named
principal (the user id of its sessions, what `gateway.admins.api` lists); a bare key is a
principal of its own, named by a short hash that reveals nothing of the key. The operator's
CLI still sees every session."""

from __future__ import annotations

import asyncio
from pathlib import Path

from openai import AsyncOpenAI
from typer.testing import CliRunner

from adapters.api.adapter import ApiAdapter
from adapters.api.settings import ApiSettings, key_principal
from gateway.cli.sessions_cmd import app as sessions_app
from gateway.paths import home, set_home
from tests.fakes.openai_server import FakeOpenAIServer, text
from tests.gateway.runtime_harness import runner_for

OPS_KEY = "sk-ops-0123456789abcdef"
BARE_KEY = "sk-bare-fedcba9876543210"


async def _ask(client: AsyncOpenAI, content: str, user: str) -> str:
    resp = await client.chat.completions.create(
        model="hermes-agent", user=user, messages=[{"role": "user", "content": content}])
    return resp.choices[0].message.content or ""


async def test_named_and_bare_keys_are_principals(tmp_path: Path,
                                                  model: FakeOpenAIServer) -> None:
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [
        {"name": "ops", "key": OPS_KEY}, BARE_KEY]})
    model.enqueue(text("Hello ops."), text("Hello bare."))
    async with runner_for(tmp_path, model, adapters={"api": adapter}, compression__enabled=False,
                          gateway__admins={"api": ["ops"]}) as (runner, _):
        base = f"http://127.0.0.1:{adapter.port}/v1"
        async with AsyncOpenAI(base_url=base, api_key=OPS_KEY, max_retries=0) as ops, \
                AsyncOpenAI(base_url=base, api_key=BARE_KEY, max_retries=0) as bare:
            await _ask(ops, "hi", "desk")
            await _ask(bare, "hi", "desk")
            who_ops = await _ask(ops, "/whoami", "desk")
            who_bare = await _ask(bare, "/whoami", "desk")
        sessions = await runner.store.list_sessions()
    assert sorted(s.user_id or "" for s in sessions) == sorted(["ops", key_principal(BARE_KEY)])
    assert "Role: admin" in who_ops and "id ops" in who_ops
    assert "Role: member" in who_bare and BARE_KEY not in who_bare
    # The operator's CLI lists every principal's sessions.
    before = home()
    set_home(tmp_path)
    try:
        # (in a thread: the CLI runs its own event loop)
        listed = await asyncio.to_thread(CliRunner().invoke, sessions_app, ["list", "--json"])
    finally:
        set_home(before)
    assert listed.exit_code == 0, listed.output
    assert all(s.id in listed.output for s in sessions)


def test_api_key_entries_validate() -> None:
    s = ApiSettings.model_validate({"api_keys": [{"name": "ops", "key": OPS_KEY}, BARE_KEY]})
    assert s.principals() == (("ops", OPS_KEY), (key_principal(BARE_KEY), BARE_KEY))
    assert s.keys() == (OPS_KEY, BARE_KEY)
    assert OPS_KEY not in repr(s) and OPS_KEY in s.secrets()
    dup = ApiSettings.model_validate({"enabled": True, "api_keys": [
        {"name": "ops", "key": "k1"}, {"name": "ops", "key": "k2"}]})
    assert [p.key for p in dup.problems()] == ["api_keys"]
    for bad in ({"name": "../x", "key": "k"}, {"name": "", "key": "k"}, {"name": "a"}):
        try:
            ApiSettings.model_validate({"api_keys": [bad]})
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad!r}")
