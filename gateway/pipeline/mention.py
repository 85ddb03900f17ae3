"""Group mention gating: in groups only messages addressed to the bot reach the agent."""

from __future__ import annotations

from collections.abc import Callable

from gateway.pipeline.chain import Inbound, Next

__all__ = ["MentionGate"]


class MentionGate:
    """Drops unaddressed group messages (not even kept as context).

    A group message passes when it mentions the bot or replies to one of its messages.
    `require_mention(platform)` comes from `platforms.<name>.require_mention` (default on).
    Adapters that authenticate their own users (the HTTP API) are never gated.
    """

    def __init__(self, require_mention: Callable[[str], bool]) -> None:
        self._required = require_mention

    def passes(self, item: Inbound) -> bool:
        ev = item.event
        return not (
            ev.is_group
            and not item.capabilities.trusted_auth
            and self._required(ev.platform)
            and not (ev.mentions_bot or ev.reply_to_bot)
        )

    async def __call__(self, item: Inbound, nxt: Next) -> None:
        if not self.passes(item):
            item.drop("not_mentioned")
            return
        await nxt()
