"""Authorization: allow-lists per platform and global, pairing codes for unknown DM users."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from gateway.events import MessageEvent
from gateway.pipeline.chain import Inbound, Next

__all__ = ["AccessPolicy", "Authorize", "OpenPolicyError", "PairingLedger"]

log = structlog.get_logger("gateway.authz")

PAIRING_REPLY_COOLDOWN_S = 600.0


class OpenPolicyError(Exception):
    """A platform would accept everyone without `allow_all: true`: refuse to start."""


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """Pure allow-list and admin rules. User ids are compared as strings."""

    per_platform: Mapping[str, frozenset[str]] = field(default_factory=dict)
    global_allowed: frozenset[str] = frozenset()
    allow_all: Mapping[str, bool] = field(default_factory=dict)
    #: `gateway.admins`: platform → user ids that may run admin commands.
    admins: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def allows(self, platform: str, user_id: str) -> bool:
        if self.allow_all.get(platform, False):
            return True
        uid = str(user_id)
        return uid in self.global_allowed or uid in self.per_platform.get(platform, frozenset())

    def is_listed(self, platform: str, user_id: str) -> bool:
        """In a configured allow-list (not merely paired)."""
        uid = str(user_id)
        return uid in self.global_allowed or uid in self.per_platform.get(platform, frozenset())

    def is_admin(self, platform: str, user_id: str) -> bool:
        """Listed in `gateway.admins` for `platform`. While no platform lists an admin,
        users in an allow-list (never merely paired ones, never `allow_all` strangers) are
        admins, so a configuration from before admins existed keeps its owner in charge."""
        if any(self.admins.values()):
            return str(user_id) in self.admins.get(platform, frozenset())
        return self.is_listed(platform, user_id)


class PairingLedger(Protocol):
    async def is_paired(self, platform: str, user_id: str) -> bool: ...

    async def issue_pairing_code(
        self, platform: str, user_id: str, display: str | None
    ) -> str | None:
        """A fresh code (plaintext, stored hashed), or None when the user is rate-limited."""


class Authorize:
    """Lets allowed and paired users through.

    An unknown user in a DM gets a pairing code to hand to the owner
    (`hermes pairing approve PLATFORM CODE`) and never reaches the agent; replies to the same
    user are rate-limited. Unknown users in groups are dropped silently. Adapters with
    `trusted_auth` (the HTTP API checks bearer keys) skip this step.
    """

    def __init__(
        self,
        policy: AccessPolicy,
        pairing: PairingLedger,
        reply: Callable[[MessageEvent, str], Awaitable[None]],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._policy = policy
        self._pairing = pairing
        self._reply = reply
        self._clock = clock
        self._last_reply: dict[tuple[str, str], float] = {}

    def admits_now(self, item: Inbound) -> bool:
        """Let through without a lookup (a trusted adapter, or an allow-listed user); a
        pairing lookup may still let through an event this refuses."""
        ev = item.event
        return item.capabilities.trusted_auth or self._policy.allows(ev.platform, ev.user.id)

    async def __call__(self, item: Inbound, nxt: Next) -> None:
        ev = item.event
        if self.admits_now(item):
            await nxt()
            return
        if await self._pairing.is_paired(ev.platform, ev.user.id):
            await nxt()
            return
        item.drop("unauthorized")
        if ev.is_group:
            return
        await self._offer_pairing(ev)

    async def _offer_pairing(self, ev: MessageEvent) -> None:
        who = (ev.platform, ev.user.id)
        now = self._clock()
        if now - self._last_reply.get(who, float("-inf")) < PAIRING_REPLY_COOLDOWN_S:
            return
        self._last_reply[who] = now
        if len(self._last_reply) > 10_000:  # bounded memory
            self._last_reply = dict(list(self._last_reply.items())[-5_000:])
        code = await self._pairing.issue_pairing_code(ev.platform, ev.user.id, ev.user.name)
        log.info("pairing_requested", platform=ev.platform, issued=code is not None)
        if code is None:
            await self._reply(
                ev, "Too many pairing requests. Please wait a while before trying again."
            )
            return
        await self._reply(
            ev,
            "I don't know you yet. Ask my owner to approve this pairing code "
            f"(valid for 1 hour):\n\n{code}\n\n"
            f"They can run: hermes pairing approve {ev.platform} {code}",
        )
