"""Commands declare who may use them and the command lane enforces it (issue 14): the
`access` of every built-in, and the refusal texts, which say why."""

from __future__ import annotations

from gateway.commands.access import refusal
from gateway.commands.builtin import builtin_registry
from gateway.commands.registry import Access, Command
from gateway.events import ChatType, MessageEvent, UserRef

CHANGES_THE_CONVERSATION = {"new", "undo", "compress", "branch", "title", "resume"}


def _event(chat_type: ChatType) -> MessageEvent:
    return MessageEvent(platform="fake", event_id="1", chat_id="c", chat_type=chat_type,
                        user=UserRef(id="u"))


async def _nothing(_ctx: object) -> str:
    return ""


def test_builtins_declare_who_may_use_them() -> None:
    reg = builtin_registry()
    assert {c.name for c in reg if c.access is Access.GROUP} == CHANGES_THE_CONVERSATION
    assert {c.name for c in reg if c.access is Access.EVERYONE} == {
        "help", "stop", "status", "sessions", "whoami", "tools", "skills",
        "approve", "deny"}  # who may decide is the approval desk's rule (requester or admin)
    assert [c.name for c in reg if c.reads_without_args] == ["title"]
    assert "[admins, in groups]" in reg.help_text()


def test_refusals_by_access_level_and_chat() -> None:
    group, dm = _event(ChatType.GROUP), _event(ChatType.DM)
    shared = Command("new", "x", _nothing, access=Access.GROUP)
    admin_only = Command("reload", "x", _nothing, access=Access.ADMIN)
    title = Command("title", "x", _nothing, access=Access.GROUP, reads_without_args=True)
    text = refusal(shared, group, "", is_admin=False)
    assert text is not None and text.startswith("🔒 In a group, /new") and "admin" in text
    assert refusal(shared, group, "", is_admin=True) is None
    assert refusal(shared, group, "", is_admin=False, group_commands="everyone") is None
    assert refusal(shared, dm, "", is_admin=False) is None
    assert refusal(title, group, "", is_admin=False) is None
    assert refusal(title, group, "New name", is_admin=False) is not None
    for ev in (group, dm):
        text = refusal(admin_only, ev, "", is_admin=False, group_commands="everyone")
        assert text is not None and "/reload is for admins only" in text
        assert refusal(admin_only, ev, "", is_admin=True) is None


def test_admins_are_listed_per_platform_and_default_to_the_allow_lists() -> None:
    from gateway.pipeline.authz import AccessPolicy

    listed = AccessPolicy(per_platform={"telegram": frozenset({"1", "2"})},
                          allow_all={"slack": True})
    # No admins configured: allow-listed users are admins; paired or allow_all ones are not.
    assert listed.is_admin("telegram", "1") and not listed.is_admin("telegram", "3")
    assert not listed.is_admin("slack", "anyone")
    named = AccessPolicy(per_platform={"telegram": frozenset({"1", "2"})},
                         admins={"telegram": frozenset({"2"}), "api": frozenset({"ops"})})
    assert named.is_admin("telegram", "2") and not named.is_admin("telegram", "1")
    assert named.is_admin("api", "ops") and not named.is_admin("telegram", "ops")
