"""What the session manager needs from a replica set: who owns a session, and its queue.

With several gateway replicas on one database (`storage.backend: postgres`) a session is
worked by the replica holding its session lease. The manager then sends every live event
through `SessionOwnership.admit`: the event is put in its session's durable line and, when
this replica owns (or can take) the session, the line's events come back claimed, in order,
for the manager to hand to the session's worker. Otherwise the owner is woken to claim it.
Each turn runs under the fence of the lease (`fence_for`), so a replica that lost the session
cannot store or send its reply. Without an ownership (SQLite, one process) none of this runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from gateway.events import MessageEvent
from storage.fencing import SessionFence

if TYPE_CHECKING:
    from gateway.sessions.manager import SessionManager

__all__ = ["Claimed", "CommandSink", "SessionOwnership"]


@dataclass(frozen=True, slots=True)
class Claimed:
    """An admission or take. `held`: the event (for `admit`) is in its session's line.
    `owned`: this replica holds the session now; then `events` are the line's events it
    claimed, in order, each with `recovered` (another replica had it before: queue it
    without the busy policy). `fresh`: the lease was taken now, not kept (the line then
    includes events this replica had claimed before). `takeover`: the lease was taken from a replica that did not
    release it, whose unfinished work must be recovered first. `owner`: the live holder."""

    held: bool = True
    owned: bool = False
    fresh: bool = False
    takeover: bool = False
    owner: str | None = None
    events: list[tuple[MessageEvent, bool]] = field(default_factory=list)


class CommandSink(Protocol):
    """Where the session's owner runs the slash commands found in its line (the inbound
    router). A command acts on the live state of its session (a running turn, the queue),
    which only the owner has, so with replicas a command event goes into the session's line
    like a message, and the owner hands it here instead of to the session's worker: at once,
    not behind the running turn."""

    def is_command(self, event: MessageEvent) -> bool:
        """`event` carries a slash command this gateway runs."""
        ...

    async def run_command(self, key: str, event: MessageEvent) -> None:
        """Run the command of `event` for session `key` here and reply to the chat. Must
        not raise."""
        ...


class SessionOwnership(Protocol):
    replica_id: str

    async def admit(self, key: str, event: MessageEvent, *, take: bool) -> Claimed:
        """Put `event` in session `key`'s line; with `take`, take or keep the session and
        claim its line. Raises storage errors (the event is then not in the line)."""
        ...

    async def take(self, key: str) -> Claimed:
        """Take or keep session `key` and claim its line (a sweep, a wake-up)."""
        ...

    def fence_for(self, key: str) -> SessionFence | None:
        """The lease a turn of `key` starting now runs under; None when not owned."""
        ...

    def owns(self, key: str) -> bool: ...

    def drop(self, key: str) -> None:
        """Forget the lease of `key` (it was lost: another replica holds it now)."""
        ...

    async def release(self, key: str) -> None:
        """The session's worker went idle: give its lease up. Must not raise."""
        ...

    async def recover(self, key: str, manager: SessionManager) -> None:
        """After a takeover: finish the previous owner's work on `key` (its unsent finals,
        a turn it was running) before the line's events. Must not raise."""
        ...
