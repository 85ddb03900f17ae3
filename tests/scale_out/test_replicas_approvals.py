"""`/approve` in a group with a session per user, on two replicas: the approver's session is
not the one whose turn waits, so the command can run on the other replica. It decides the
stored request there, and the waiting turn (on its own replica) runs the command once.
Before, that replica found nothing waiting in its memory and the request timed out."""

from __future__ import annotations

import stat
from pathlib import Path

from adapters.fake import FakeAdapter
from gateway.events import Principal
from gateway.runner import GatewayRunner
from storage.postgres import PostgresStore
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.gateway.runtime_harness import runner_for
from tests.multiuser.support import tool_results

REPLICAS = {"storage__backend": "postgres", "gateway__replicas__lease_s": 3.0,
            "gateway__replicas__sweep_s": 0.2, "gateway__replicas__stale_handover_s": 1.0,
            "tools__terminal__enabled": True, "tools__terminal__approval_timeout_s": 20.0,
            "compression__enabled": False, "gateway__admins": {"fake": ["u2"]}}
CHMOD = {"command": "chmod 777 notes.txt && echo changed"}


def _notes(runner: GatewayRunner) -> Path:
    assert runner.parts is not None
    workspace = runner.parts.agents.spaces.workspace(Principal("fake", "u1"))
    workspace.mkdir(parents=True, exist_ok=True)
    path = workspace / "notes.txt"
    path.write_text("hello")
    path.chmod(0o644)
    return path


async def test_an_admin_approves_on_the_other_replica_and_the_waiting_turn_runs_it(
        tmp_path: Path, model: FakeOpenAIServer, replica_db: str) -> None:
    model.enqueue(tool_calls(call("terminal", CHMOD)), text("Done, it is open now."))
    fa, fb = FakeAdapter("fake"), FakeAdapter("fake")
    async with runner_for(tmp_path / "a", model, adapters={"fake": fa}, storage__dsn=replica_db,
                          **REPLICAS) as (ra, _), \
            runner_for(tmp_path / "b", model, adapters={"fake": fb},
                       storage__dsn=replica_db, **REPLICAS) as (rb, _):
        notes = _notes(ra)
        await fa.inject("open up notes.txt", chat_id="g1", user_id="u1", chat_type="group",
                        mentions_bot=True)
        await fa.wait_for(lambda: any("Approval needed" in t for t in fa.messages("g1")))
        await fb.inject("/approve", chat_id="g1", user_id="u2", chat_type="group",
                        mentions_bot=True)
        await fb.wait_for(lambda: any(t.startswith("✅ Approved") for t in fb.messages("g1")),
                          timeout_s=15)
        await fa.wait_for(lambda: "Done, it is open now." in fa.messages("g1"), timeout_s=15)
        assert stat.S_IMODE(notes.stat().st_mode) == 0o777
        result = tool_results(model.requests[1])[-1]
        assert "changed" in result and "not approved" not in result
        assert not any("timed out" in t for t in fa.messages("g1") + fb.messages("g1"))
        assert rb.replica is not None and ra.replica is not None
    async with await PostgresStore.open(replica_db) as store:
        [row] = await store.list_approvals()
        assert (row.status, row.decided_by, row.requester) == ("approved", "u2", "u1")
