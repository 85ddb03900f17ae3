"""Two Telegram users in one group (issue 14): roles for the commands that change the
group's conversation, and history scoped to the chat (fake Bot API, real runner)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.multiuser.support import tool_payload
from tests.multiuser.telegram_harness import ADA, BOB, Group, group_gateway

ADMINS = {"telegram": [str(ADA["id"])]}
SHARED = ("/new", "/undo", "/compress", "/branch", "/title Plans")


@pytest.fixture
async def g(tmp_path: Path, model: FakeOpenAIServer) -> AsyncIterator[Group]:
    """Ada (an admin) and Bob (a member) in one group, each with a direct chat too."""
    async with group_gateway(tmp_path, model, gateway__admins=ADMINS) as group:
        yield group


async def test_in_a_group_only_an_admin_may_change_the_conversation(
    g: Group, model: FakeOpenAIServer
) -> None:
    model.enqueue(text("Hi Bob."), text("Hi Ada."))
    await g.turn(g.group, BOB, "hello", "Hi Bob.")
    await g.turn(g.group, ADA, "hello", "Hi Ada.")
    store = g.runner.store
    before = {s.id: (s.ended_at, s.title) for s in await store.list_sessions()}
    for command in SHARED:
        reply = await g.command(g.group, BOB, command)
        assert reply.startswith("🔒"), (command, reply)
        assert "admin" in reply and command.split()[0] in reply
    # Nothing changed: no session ended, renamed, rewound or created.
    after = {s.id: (s.ended_at, s.title) for s in await store.list_sessions()}
    assert after == before
    # Reading is open to everyone; the admin may change the conversation.
    assert not (await g.command(g.group, BOB, "/title")).startswith("🔒")
    assert (await g.command(g.group, ADA, "/title Plans")) == "🏷 Title set: Plans"
    assert (await g.command(g.group, ADA, "/new")).startswith("✨ New session")
    # In a direct chat Bob's own conversation is his to change.
    model.enqueue(text("Hi in private."))
    await g.turn(g.bob_dm, BOB, "hello", "Hi in private.")
    assert (await g.command(g.bob_dm, BOB, "/new")).startswith("✨ New session")


async def test_group_commands_everyone_lets_members_change_the_conversation(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    model.enqueue(text("Hi Bob."))
    async with group_gateway(tmp_path, model, gateway__admins=ADMINS,
                             gateway__group_commands="everyone") as g:
        await g.turn(g.group, BOB, "hello", "Hi Bob.")
        assert (await g.command(g.group, BOB, "/new")).startswith("✨ New session")


async def test_group_search_sees_the_groups_sessions_but_no_private_chat(
    g: Group, model: FakeOpenAIServer
) -> None:
    for chat, said in ((g.ada_dm, "my PIN is 4321"), (g.group, "the deploy PIN rotates on Friday")):
        model.enqueue(text("Noted."))
        await g.turn(chat, ADA, said, "Noted.")
    model.enqueue(tool_calls(call("session_search", {"query": "PIN"})), text("Searched."))
    await g.turn(g.group, BOB, "search past conversations for PIN", "Searched.")
    found = str(tool_payload(model.requests[-1]))
    assert "4321" not in found
    assert "rotates on Friday" in found  # the group's own history, Ada's turn in it
    # /resume of Ada's private session from the group finds nothing.
    [private] = [s for s in await g.runner.store.list_sessions() if s.chat_id == g.ada_dm]
    reply = await g.command(g.group, ADA, f"/resume {private.id}")
    assert reply.startswith(f"No session called “{private.id}” here.")
    # /sessions in the group lists the group's sessions, not Ada's private one.
    listed = await g.command(g.group, BOB, "/sessions")
    assert private.id not in listed
    group_sessions = [s for s in await g.runner.store.list_sessions()
                      if s.chat_id == g.group]
    assert len(group_sessions) == 2
    assert all(s.id in listed for s in group_sessions)
