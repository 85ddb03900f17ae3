"""Folders named after a user or chat id are safe for any id (issue 14): one path
component, no traversal, no collisions; a hostile id cannot make the file tools write
outside its own workspace."""

from __future__ import annotations

from pathlib import Path

from gateway.principals import UserSpaces, folder_name
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.integration.harness import gateway

HOSTILE = ["..", "../../etc", "/etc/passwd", "a/b", "a\x00b", "", ".", "~root", "C:\\x",
           "x" * 5000, "ünïcødé", "a b", "-rf", "key:abc"]


def test_folder_names_are_one_safe_component_and_never_collide() -> None:
    names = [folder_name("telegram", i) for i in HOSTILE]
    for name in names:
        assert "/" not in name and "\\" not in name and "\x00" not in name
        assert name not in (".", "..") and not name.startswith(".")
        assert len(name) <= 80
    assert len(set(names)) == len(names)
    assert folder_name("telegram", "42") != folder_name("slack", "42")
    assert folder_name("a.b", "c") != folder_name("a", "b.c")
    root = Path("/srv/hermes")
    spaces = UserSpaces(memories=root / "memories", workspace_root=root / "workspace",
                        cache=root / "cache")
    for ident in HOSTILE:
        from gateway.events import Principal

        p = Principal("telegram", ident)
        for path, parent in ((spaces.workspace(p), root / "workspace" / "users"),
                             (spaces.user_dir(p), root / "memories" / "users"),
                             (spaces.chat_cache("telegram", ident), root / "cache" / "chats")):
            assert path.parent == parent


async def test_a_hostile_user_id_writes_only_inside_its_own_workspace(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    evil = "../../../../escaped"
    model.enqueue(tool_calls(call("write_file", {"path": "x.txt", "content": "hi"})),
                  text("Written."))
    async with gateway(tmp_path, model, gateway__allowed_users=[evil]) as (_runner, fake):
        await fake.inject("write it", chat_id="c9", user_id=evil)
        await fake.wait_turns(1)
    written = list(tmp_path.rglob("x.txt"))
    assert written == [tmp_path / "workspace" / "users" / folder_name("fake", evil) / "x.txt"]
    assert not (tmp_path.parent / "escaped").exists()
