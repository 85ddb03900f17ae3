"""Who may run a command: the check the command lane makes before any handler runs."""

from __future__ import annotations

from typing import Literal

from gateway.commands.registry import Access, Command
from gateway.events import MessageEvent

__all__ = ["GroupCommands", "refusal"]

GroupCommands = Literal["admins", "everyone"]


def refusal(command: Command, event: MessageEvent, args: str, *, is_admin: bool,
            group_commands: GroupCommands = "admins") -> str | None:
    """The reply refusing `event`'s sender the command (it says why), or None when they may
    run it. `is_admin`: the sender is an admin (`gateway.admins`, or the operator)."""
    if is_admin or command.access is Access.EVERYONE:
        return None
    if command.reads_without_args and not args.strip():
        return None
    name = f"/{command.name}"
    if command.access is Access.ADMIN:
        return (f"🔒 {name} is for admins only, and you are not one here. Admins are listed "
                "under gateway.admins in the bot's configuration.")
    if not event.is_group or group_commands == "everyone":
        return None
    return (f"🔒 In a group, {name} changes the conversation everyone here shares, so only "
            "an admin may use it (gateway.group_commands: admins). Ask an admin, or talk to "
            "me in a direct chat.")
