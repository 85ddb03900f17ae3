"""What one compression job ended with (`JobOutcome`), as shown to users, the CLI and /status."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = ["NOTHING_WRITTEN", "JobOutcome", "OutcomeStatus"]

OutcomeStatus = Literal[
    "compressed",  # a child (rotate) or an in-place rewrite was committed
    "preview",  # --preview: what would happen; nothing changed
    "noop",  # nothing to compress (counts as ineffective)
    "skipped",  # blocked by guards (cooldown, anti-thrash) or the feasibility rule
    "deferred",  # another holder has the session's lease: not a failure
    "failed",  # the summarizer (or the engine) failed; history unchanged
    "timeout",  # the host deadline passed; any late result was discarded
    "lease_lost",  # the lease expired or was taken over; the result was discarded
    "superseded",  # the session is no longer the live head of its lineage
    "queue_full",  # the bounded queue had no room
    "cancelled",  # the pool was closed while the job waited or ran
    "not_found",  # no such session
]

NOTHING_WRITTEN: frozenset[str] = frozenset({"deferred", "noop", "timeout", "lease_lost", "superseded"})
"""Statuses that mean "nothing was written" in the sense of DESIGN §7 (CLI exit code 3)."""


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """Result of one compression job.

    `session_id` is the session the job was for; `child_session_id` is the session to continue
    in after a rotation (None otherwise; for in-place it is None and `session_id` stays live).
    `detail` is a short text safe to show (no secrets). `lease_token` is the fencing token the
    job held, when it got one.
    """

    status: OutcomeStatus
    session_id: str
    child_session_id: str | None = None
    detail: str = ""
    tokens_before: int = 0
    tokens_after: int = 0
    summary_preview: str | None = None
    lease_token: int | None = None

    @property
    def committed(self) -> bool:
        return self.status == "compressed"

    @property
    def continue_in(self) -> str | None:
        """The session id a turn continues in after a commit (child or same id), else None."""
        if self.status != "compressed":
            return None
        return self.child_session_id or self.session_id

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
