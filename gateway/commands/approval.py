"""`/approve` and `/deny`: answer a dangerous command waiting for approval in this chat.

Anyone who reaches the bot may send them; the approval desk lets only the user who asked,
or an admin, decide (a refusal leaves the request waiting). They work while the agent is
busy: the busy turn is the one waiting."""

from __future__ import annotations

from gateway.commands.context import CommandContext
from gateway.commands.registry import Command

__all__ = ["approval_commands"]


async def _decide(c: CommandContext, approve: bool) -> str:
    desk = c.services.approvals
    if desk is None:
        return "Nothing here needs approval."
    ev = c.event
    approval_id = c.args.split()[0] if c.args.split() else None
    return await desk.decide(platform=ev.platform, chat_id=ev.chat_id, user_id=ev.user.id,
                             approve=approve, is_admin=c.is_admin, approval_id=approval_id)


async def _approve(c: CommandContext) -> str:
    return await _decide(c, True)


async def _deny(c: CommandContext) -> str:
    return await _decide(c, False)


def approval_commands() -> list[Command]:
    return [
        Command("approve", "Approve the command waiting for approval", _approve, args="[id]",
                busy_ok=True),
        Command("deny", "Refuse the command waiting for approval", _deny, args="[id]",
                busy_ok=True),
    ]
