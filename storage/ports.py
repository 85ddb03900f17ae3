"""The storage ports: what each consumer may ask of the state store, one small Protocol each.

Everything above `storage/` depends on these Protocols, never on `StateStore` itself (only the
composition root that opens the store names the class). A consumer that needs several of
them declares its own Protocol that inherits the ones it uses, next to the consumer. A second
backend (e.g. PostgreSQL) implements the same ports; `tests/storage/test_storage_ports.py`
and the type checker prove that `StateStore` satisfies every one of them.

Shared conventions: methods raise `storage.errors.StorageError` subclasses unless the
docstring says otherwise; every stored time is epoch seconds from the store's clock;
messages are OpenAI-shaped dicts (`role`, `content`, `tool_calls`, …) plus the store's
private `_`-prefixed keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from storage.replica_ports import ReplicaLedger
from storage.types import (
    ApprovalRecord,
    ApprovedUser,
    DayUsage,
    GuardState,
    HeldEvent,
    Lease,
    LiveCheck,
    OutboxDraft,
    OutboxItem,
    PairingCode,
    ReviewRecord,
    SearchHit,
    Session,
    SessionScope,
    StoredFinal,
    UsageDelta,
)

__all__ = [
    "ApprovalLedger",
    "CompactionCommitter",
    "CursorLedger",
    "DedupLedger",
    "GuardStore",
    "HeldEvents",
    "HistoryReader",
    "LeaseStore",
    "LineageStore",
    "LiveTranscript",
    "Maintenance",
    "MessageLog",
    "OutboxLedger",
    "PairingStore",
    "Reachability",
    "ReplicaLedger",
    "Reports",
    "ReviewLedger",
    "SearchIndex",
    "SessionReader",
    "SessionWriter",
    "StoreLifecycle",
    "UsageLedger",
]

Message = dict[str, Any]
EventKey = tuple[str, str]  # (platform, event id)


class SessionReader(Protocol):
    """Look sessions up."""

    async def get_session(self, session_id: str) -> Session | None: ...

    async def require_session(self, session_id: str) -> Session:
        """Like `get_session`; raises `SessionNotFoundError` when missing."""
        ...

    async def list_sessions(
        self, *, source: str | None = None, live_only: bool = False,
        include_archived: bool = True, limit: int = 50, scope: SessionScope | None = None,
    ) -> list[Session]:
        """Sessions newest first (by `started_at`); with `scope`, only that scope's (filtered
        before the limit). Without, every session (the operator's view)."""
        ...

    async def find_by_session_key(self, session_key: str) -> Session | None:
        """The most recently started live session for a routing key, or None."""
        ...


class SessionWriter(Protocol):
    """Create sessions and change their identity, title and lifecycle."""

    async def create_session(
        self, *, source: str, id: str | None = None, user_id: str | None = None,
        session_key: str | None = None, chat_id: str | None = None,
        chat_type: str | None = None, thread_id: str | None = None, model: str | None = None,
        system_prompt: str | None = None, parent_session_id: str | None = None,
        lineage_kind: str | None = None, title: str | None = None,
        profile_name: str | None = None, started_at: float | None = None,
    ) -> Session: ...

    async def end_session(self, session_id: str, reason: str) -> bool:
        """End a live session; the first end reason wins. Returns whether this call ended it."""
        ...

    async def reopen_session(self, session_id: str) -> bool:
        """Clear the end; returns whether the session was ended before."""
        ...

    async def set_title(self, session_id: str, title: str | None) -> str | None:
        """Set (or clear with None/blank) the title; returns the stored title. Titles are
        unique within a `SessionScope`. Raises `TitleInUseError` / `InvalidTitleError`."""
        ...

    async def update_session(self, session_id: str, **fields: Any) -> None:
        """Set plain columns; raises `ValueError` for a column that is not editable."""
        ...

    async def update_system_prompt(self, session_id: str, system_prompt: str) -> None: ...

    async def touch(self, session_id: str, at: float | None = None) -> None: ...


class UsageLedger(Protocol):
    """Token counters of a session."""

    async def add_usage(
        self, session_id: str, *, input_tokens: int = 0, output_tokens: int = 0,
        cache_read_tokens: int = 0, cache_write_tokens: int = 0, reasoning_tokens: int = 0,
        api_calls: int = 1, last_prompt_tokens: int | None = None, cost_usd: float | None = None,
    ) -> GuardState:
        """Add one turn's usage; returns the guard state from just before (same transaction)."""
        ...


class GuardStore(Protocol):
    """The compression guard state of a session (cooldowns, streaks)."""

    async def get_guard(self, session_id: str) -> GuardState: ...

    async def update_guard(
        self, session_id: str, *, cooldown_until: float | None = ...,
        cooldown_error: str | None = ..., fallback_streak: int = ...,
        ineffective_count: int = ..., last_prompt_tokens: int | None = ...,
        compression_count: int = ..., failure_streak: int = ..., verify_pending: bool = ...,
    ) -> GuardState:
        """Write the given fields (others unchanged); returns the stored state."""
        ...


class MessageLog(Protocol):
    """A session's stored messages (history is never deleted)."""

    async def append_messages(self, session_id: str, messages: list[Message]) -> list[int]: ...

    async def load_history(self, session_id: str) -> list[Message]:
        """The active transcript in order (what the model should see)."""
        ...

    async def load_all(self, session_id: str, *, include_inactive: bool = True) -> list[Message]:
        ...

    async def load_tail(self, session_id: str, limit: int) -> tuple[list[Message], int]:
        """The last `limit` rows in order (as `load_all`) and the session's row count."""
        ...

    async def get_message(self, message_id: int) -> Message | None: ...

    async def rewind(self, session_id: str, n_user_turns: int = 1) -> list[Message]:
        """Hide the last `n_user_turns` user turns (never deleted); returns what was hidden."""
        ...

    async def last_message_id(self, session_id: str) -> int | None: ...

    async def revise_message(self, message_id: int, content: str,
                             meta: dict[str, Any] | None = None) -> bool:
        """Replace a stored message's text and add `meta` to its keys; False: no such row."""
        ...


class LiveTranscript(Protocol):
    """The turn path: write to and read from the live tip of a compression lineage."""

    async def append_live(
        self, session_id: str, messages: list[Message], *, release: Iterable[EventKey] = (),
    ) -> tuple[str, list[int]]:
        """Append to the session's live tip, letting go of the held events `release` in the
        same transaction. Returns (the session written to, the message ids)."""
        ...

    async def live_history(self, session_id: str) -> tuple[Session, list[Message]]:
        """The live tip and its active transcript, read together."""
        ...

    async def append_with_final(
        self, session_id: str, messages: list[Message], final: OutboxDraft,
        *, release: Iterable[EventKey] = (), usage: UsageDelta | None = None,
    ) -> StoredFinal:
        """The turn's reply recorded in the outbox, its messages appended and its `usage`
        added to the session written to, in one transaction."""
        ...

    async def append_and_read(
        self, session_id: str, messages: list[Message], *, release: Iterable[EventKey] = (),
        check: LiveCheck | None = None,
    ) -> tuple[Session, list[Message], list[int]]:
        """`append_live` and `live_history` in one transaction: (the tip, its transcript,
        the new message ids). With `check`, raises `SessionMovedError` (nothing written)
        unless the session is still the key's live one and `check.accept` takes it."""
        ...


class LineageStore(Protocol):
    """Parents, children and forks of sessions."""

    async def ancestors(self, session_id: str) -> list[Session]: ...

    async def children(self, session_id: str) -> list[Session]: ...

    async def tip(self, session_id: str) -> str: ...

    async def resolve(
        self, title_or_id: str, scope: SessionScope | None = None
    ) -> Session | None:
        """A session id or exact title → the tip of its compression lineage (or None). With
        `scope`, sessions outside it are not found (None, as for an unknown name)."""
        ...

    async def branch(self, session_id: str, title: str | None = None) -> Session: ...

    async def next_lineage_title(self, title: str, scope: SessionScope | None = None) -> str:
        ...


class SearchIndex(Protocol):
    """Full-text search over stored messages. Never raises for any query text."""

    async def search(
        self, query: object, *, limit: int = 20, source: str | None = None,
        session_id: str | None = None, roles: Sequence[str] | None = None,
        scope: SessionScope | None = None,
    ) -> list[SearchHit]:
        """With `scope`, only messages of that scope's sessions, filtered in the query
        (before ranking and the limit). Without, every session (the operator's view)."""
        ...


class HistoryReader(SessionReader, MessageLog, LineageStore, SearchIndex, Protocol):
    """Read-only views of stored conversations (the operator's CLI, the demo, a dashboard)."""


class LeaseStore(Protocol):
    """Durable compression leases with fencing tokens."""

    async def acquire_lease(self, session_id: str, holder: str, ttl: float) -> Lease | None: ...

    async def renew_lease(self, lease: Lease, ttl: float) -> Lease | None: ...

    async def release_lease(self, lease: Lease) -> bool: ...

    async def current_lease(self, session_id: str) -> Lease | None: ...


class CompactionCommitter(Protocol):
    """The commit fence: publish a compression result in one checked transaction. Both raise
    `FenceRejected` when the lease, the token, the live head or the deadline no longer hold."""

    async def commit_rotation(
        self, lease: Lease, parent_id: str, *, snapshot_last_message_id: int,
        compressed_messages: list[Message], system_prompt: str | None = None,
        child_title: str | None = ..., deadline: float | None = None, **session_fields: Any,
    ) -> str: ...

    async def commit_in_place(
        self, lease: Lease, session_id: str, *, snapshot_last_message_id: int,
        compressed_messages: list[Message], deadline: float | None = None,
    ) -> list[int]: ...


class DedupLedger(Protocol):
    """Durable inbound dedup by (platform, event id)."""

    async def record_if_new(self, platform: str, event_id: str, *,
                            claimed_by: str | None = None, reclaim_own: bool = False,
                            pending_s: float = 30.0) -> bool:
        """True the first time an event is recorded, False for a repeat; raises
        `EventPendingError` while another live replica takes it in (see the store)."""
        ...

    async def record_and_hold(self, platform: str, event_id: str, session_key: str,
                              payload: str, *, claimed_by: str, reclaim_own: bool = False,
                              pending_s: float = 30.0) -> bool:
        """`record_if_new` and, for a new event, its hold for `session_key`, in one
        transaction: True when new (now held), False for a repeat."""
        ...

    async def inbound_settle(self, keys: Iterable[EventKey]) -> None:
        """Recorded events whose fate is decided without a hold."""
        ...


class HeldEvents(Protocol):
    """Inbound events waiting for their turn, durable across restarts."""

    async def inbound_hold(self, platform: str, event_id: str, session_key: str,
                           payload: str, *, claimed_by: str | None = None) -> bool: ...

    async def inbound_release(self, keys: Iterable[EventKey]) -> None: ...

    async def inbound_held_count(self) -> int: ...

    async def inbound_held(self) -> list[HeldEvent]: ...

    async def inbound_claim_held(self, claimer: str) -> list[HeldEvent]: ...


class OutboxLedger(Protocol):
    """Replies recorded before they are sent, and their delivery state."""

    async def outbox_add(
        self, *, platform: str, chat_id: str, text: str, session_id: str | None = None,
        thread_id: str | None = None, reply_to: str | None = None,
        chat_type: str | None = None, preview_message_id: str | None = None,
        attachments: Sequence[dict[str, object]] = (),
        claimed_by: str | None = None,
    ) -> int: ...

    async def outbox_mark_sent(self, outbox_id: int,
                               platform_message_ids: Sequence[str]) -> bool: ...

    async def outbox_mark_delivered(
        self, ids: Sequence[int], platform_message_ids: Sequence[str] | None = None
    ) -> int: ...

    async def outbox_mark_failed(self, outbox_id: int, error: str) -> bool: ...

    async def outbox_mark_expired(self, ids: Sequence[int]) -> int: ...

    async def outbox_record_attempt(self, outbox_id: int, error: str) -> None: ...

    async def outbox_get(self, outbox_id: int) -> OutboxItem | None: ...

    async def outbox_undelivered(self, max_age: float | None = None) -> list[OutboxItem]: ...

    async def outbox_claim_undelivered(self, claimer: str) -> list[OutboxItem]: ...

    async def outbox_unclaim(self, outbox_id: int, claimer: str) -> bool: ...

    async def outbox_latest_for_session(self, session_id: str) -> OutboxItem | None: ...

    async def outbox_reply_for(self, platform: str, chat_id: str, reply_to: str,
                               since: float) -> OutboxItem | None: ...


class Reachability(Protocol):
    """Chats the bot can no longer write to (blocked, kicked)."""

    async def mark_unreachable(self, platform: str, chat_id: str, reason: str) -> None: ...

    async def clear_unreachable(self, platform: str, chat_id: str) -> bool: ...

    async def is_unreachable(self, platform: str, chat_id: str) -> bool: ...

    async def unreachable_chats(self) -> list[tuple[str, str]]: ...


class CursorLedger(Protocol):
    """Named durable cursors (e.g. a poll offset)."""

    async def get_cursor(self, name: str) -> str | None: ...

    async def set_cursor(self, name: str, value: str | int) -> None: ...


class PairingStore(Protocol):
    """Pairing codes (stored hashed) and approved users."""

    async def create_pairing_code(self, platform: str, user_id: str, *,
                                  display: str | None = None, ttl: float = 3600.0,
                                  length: int = 8) -> str: ...

    async def approve_pairing_code(self, platform: str, code: str) -> ApprovedUser | None: ...

    async def pending_pairing_codes(self, platform: str | None = None) -> list[PairingCode]: ...

    async def count_pairing_codes_since(self, platform: str, user_id: str,
                                        since: float) -> int: ...

    async def revoke_user(self, platform: str, user_id: str) -> bool: ...

    async def is_approved(self, platform: str, user_id: str) -> bool: ...

    async def approved_users(self, platform: str | None = None) -> list[ApprovedUser]: ...


class ApprovalLedger(Protocol):
    """Approvals of dangerous tool calls asked in the chat: every request and decision."""

    async def record_approval(self, record: ApprovalRecord) -> None:
        """Store a new request (its `status` as given, normally pending)."""
        ...

    async def decide_approval(self, approval_id: str, *, status: str,
                              decided_by: str | None) -> bool:
        """Record the decision of a pending request; False when it was not pending."""
        ...

    async def list_approvals(self, *, session_id: str | None = None,
                             limit: int = 50) -> list[ApprovalRecord]:
        """Requests, newest first (all sessions when `session_id` is None)."""
        ...

    async def get_approval(self, approval_id: str) -> ApprovalRecord | None:
        """One request as stored now (its decision, once made), or None."""
        ...

    async def approvals_pending_in(self, platform: str, chat_id: str) -> list[ApprovalRecord]:
        """A chat's requests still waiting for a decision, oldest first."""
        ...


class ReviewLedger(Protocol):
    """The background self-reviews: what each wrote and what it cost."""

    async def record_review(self, record: ReviewRecord) -> None:
        """Store a review that ended (`finished_at` 0: now; `requested_at` 0: the same)."""
        ...

    async def list_reviews(self, *, session_id: str | None = None,
                           limit: int = 50) -> list[ReviewRecord]:
        """Reviews, the latest to end first (all sessions when `session_id` is None)."""
        ...

    async def review_tokens_since(self, since: float) -> int:
        """Tokens (input + output) of the reviews that ended at or after `since`."""
        ...


class Reports(Protocol):
    """Read-only aggregates for the operator's dashboard."""

    async def usage_by_day(self, since: float) -> list[DayUsage]:
        """Tokens of the sessions started since `since`, per UTC day of their start."""
        ...

    async def session_count(self) -> int: ...


class Maintenance(Protocol):
    """Health probe and housekeeping."""

    async def writable(self) -> bool:
        """True when a write transaction commits. Never raises."""
        ...

    async def optimize(self) -> None: ...

    async def prune_ledgers(self, older_than: float, *, batch: int = 5_000) -> dict[str, int]:
        ...


class StoreLifecycle(Protocol):
    """The owner's handle: close, and hear when the single writer stopped."""

    async def close(self) -> None: ...

    def on_writer_failure(self, callback: Callable[[BaseException], None]) -> None: ...
