"""Row types returned by the state store: frozen dataclasses with explicit fields."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal, NamedTuple, TypeVar

__all__ = [
    "Session",
    "SessionScope",
    "GuardState",
    "Lease",
    "SearchHit",
    "MessagePreview",
    "OutboxDraft",
    "StoredFinal",
    "LiveCheck",
    "UsageDelta",
    "OutboxItem",
    "OutboxState",
    "PairingCode",
    "ApprovedUser",
    "ApprovalRecord",
    "DayUsage",
    "ReplicaInfo",
    "SessionLease",
    "ClaimedEvent",
    "Admission",
    "Heartbeat",
    "SweepItem",
    "ReviewRecord",
    "row_to",
]

OutboxState = Literal["pending", "sent", "delivered", "expired", "failed"]

T = TypeVar("T")


def row_to(cls: type[T], row: Any) -> T:
    """Build a dataclass from a row, taking exactly the dataclass's fields from it."""
    keys = set(row.keys())
    return cls(**{f.name: row[f.name] for f in fields(cls) if f.name in keys})  # type: ignore[arg-type]  # a dataclass's own fields


@dataclass(frozen=True, slots=True)
class Session:
    """One conversation. `lineage_kind` says how it descends from its parent:
    `compression` (a rotation child), `branch` (a /branch fork) or None (a root)."""

    id: str
    source: str
    started_at: float
    user_id: str | None = None
    session_key: str | None = None
    chat_id: str | None = None
    chat_type: str | None = None
    thread_id: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    parent_session_id: str | None = None
    lineage_kind: str | None = None
    ended_at: float | None = None
    end_reason: str | None = None
    title: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    estimated_cost_usd: float | None = None
    actual_cost_usd: float | None = None
    cost_status: str | None = None
    cooldown_until: float | None = None
    cooldown_error: str | None = None
    fallback_streak: int = 0
    ineffective_count: int = 0
    last_prompt_tokens: int | None = None
    compression_count: int = 0
    failure_streak: int = 0
    verify_pending: bool = False
    archived: bool = False
    pinned: bool = False
    last_activity: float | None = None
    message_count: int = 0
    api_call_count: int = 0
    profile_name: str | None = None

    @property
    def is_live(self) -> bool:
        return self.ended_at is None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class SessionScope:
    """The sessions one viewer may see: those whose `scope_key` equals `key`.

    A direct chat's sessions belong to its user, any other chat's sessions to that chat
    (the generated column of schema v5 computes the same key for every stored session).
    Build one with `direct`, `chat` or `of`; ports that take `scope=None` apply no filter
    (the operator's view)."""

    key: str

    @classmethod
    def direct(cls, source: str, user_id: str) -> SessionScope:
        """Every direct-chat session of the user `user_id` on `source`."""
        return cls(f"u:{len(source)}:{source}:{user_id}")

    @classmethod
    def chat(cls, source: str, chat_id: str) -> SessionScope:
        """Every session of the (group, channel, thread) chat `chat_id` on `source`."""
        return cls(f"c:{len(source)}:{source}:{chat_id}")

    @classmethod
    def of(cls, source: str, chat_type: str, chat_id: str, user_id: str) -> SessionScope:
        """The scope a message in this chat sees: its user's direct chats in a direct chat,
        else the chat's sessions."""
        return cls.direct(source, user_id) if chat_type == "dm" else cls.chat(source, chat_id)


@dataclass(frozen=True, slots=True)
class GuardState:
    """Compression guard state of one session, as stored (read fresh on every call)."""

    session_id: str
    cooldown_until: float | None
    cooldown_error: str | None
    fallback_streak: int
    ineffective_count: int
    last_prompt_tokens: int | None
    compression_count: int
    failure_streak: int = 0
    verify_pending: bool = False


@dataclass(frozen=True, slots=True)
class Lease:
    """A compression lease: `token` is the fencing token, strictly increasing per session."""

    session_id: str
    holder: str
    token: int
    acquired_at: float
    expires_at: float


@dataclass(frozen=True, slots=True)
class MessagePreview:
    """A neighbouring message of a search hit; `content` is at most 200 characters."""

    id: int
    role: str
    content: str
    timestamp: float


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result. `snippet` marks matches with « and »; `rank` is lower-is-better."""

    session_id: str
    message_id: int
    role: str
    snippet: str
    timestamp: float
    session_title: str | None
    source: str
    rank: float
    before: MessagePreview | None
    after: MessagePreview | None

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for key in ("before", "after"):
            prev = out[key]
            out[key] = None if prev is None else {f.name: getattr(prev, f.name) for f in fields(prev)}
        return out


@dataclass(frozen=True, slots=True)
class HeldEvent:
    """An inbound event accepted for a session whose user message is not stored yet."""

    platform: str
    event_id: str
    session_key: str
    payload: str  # the event as JSON, as the gateway serialized it
    recorded_at: float


@dataclass(frozen=True, slots=True)
class OutboxItem:
    """One entry of the outbound delivery ledger."""

    id: int
    session_id: str | None
    platform: str
    chat_id: str
    thread_id: str | None
    reply_to: str | None
    text: str
    state: str
    platform_message_ids: list[str]
    attempts: int
    created_at: float
    updated_at: float
    last_error: str | None
    chat_type: str | None = None
    preview_message_id: str | None = None
    attachments: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class OutboxDraft:
    """A reply to record as `pending` together with its turn's messages (see
    `LiveTranscript.append_with_final`); the fields of `outbox_add`."""

    platform: str
    chat_id: str
    text: str
    session_id: str | None = None
    thread_id: str | None = None
    reply_to: str | None = None
    chat_type: str | None = None
    preview_message_id: str | None = None
    attachments: tuple[dict[str, object], ...] = ()
    claimed_by: str | None = None


@dataclass(frozen=True, slots=True)
class UsageDelta:
    """One turn's token usage, added to its session's counters (`add_usage`, or with the
    turn's reply in `LiveTranscript.append_with_final`)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    api_calls: int = 1
    last_prompt_tokens: int | None = None
    cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class LiveCheck:
    """What `LiveTranscript.append_and_read` checks before it writes to a session the caller
    remembered instead of looking it up: that session (or its compression tip) is still the
    live session of `session_key`, and `accept(that session, as stored now)` holds (e.g. no
    reset policy ends it). `accept` runs inside the write transaction: it must be quick and
    must not block or raise."""

    session_key: str
    accept: Callable[[Session], bool] = lambda _session: True


class StoredFinal(NamedTuple):
    """What `LiveTranscript.append_with_final` stored: the session written to (the live tip),
    the new message ids, the outbox id, and, when the turn's usage went with them, the
    compression guard state from just before it (as `add_usage` returns it)."""

    session_id: str
    ids: list[int]
    outbox_id: int
    guard: GuardState | None = None


@dataclass(frozen=True, slots=True)
class PairingCode:
    """A pairing request. The plaintext code is never stored; only its hash is."""

    platform: str
    code_hash: str
    user_id: str
    display: str | None
    created_at: float
    expires_at: float
    approved_at: float | None


@dataclass(frozen=True, slots=True)
class ApprovedUser:
    platform: str
    user_id: str
    display: str | None
    approved_at: float


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    """One request to approve a dangerous tool call, and its decision. `status`: pending,
    approved, denied or timeout; `requester` and `decided_by` are user ids of `platform`."""

    id: str
    session_id: str | None
    platform: str
    chat_id: str
    requester: str
    tool: str
    command: str
    reason: str
    status: str = "pending"
    decided_by: str | None = None
    created_at: float = 0.0
    decided_at: float | None = None


@dataclass(frozen=True, slots=True)
class DayUsage:
    """Token totals of the sessions started on one UTC day (`YYYY-MM-DD`)."""

    day: str
    input_tokens: int
    output_tokens: int
    sessions: int


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    """One gateway replica as the database knows it (`replicas` row and its leases)."""

    id: str
    host: str
    home: str | None
    pid: int | None
    started_at: float
    heartbeat_at: float
    expires_at: float
    stopped_at: float | None
    live: bool
    sessions: int
    roles: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SessionLease:
    """A replica's lease on a session (by routing key). `fresh`: taken by this call (not a
    renewal of one it held); `takeover`: taken from a holder that did not release it (it
    died, stalled or was cut off), so its unfinished work must be recovered."""

    session_key: str
    holder: str
    token: int
    acquired_at: float
    expires_at: float
    fresh: bool = False
    takeover: bool = False
    prev_holder: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimedEvent:
    """A held event claimed by a session's owner. `recovered`: another replica had claimed
    it before (it waited in that replica's mailbox); otherwise it was handed over (or
    arrived here) and is new to every worker."""

    held: HeldEvent
    seq: int
    recovered: bool


@dataclass(frozen=True, slots=True)
class Admission:
    """What `session_admit` / `session_take` did. `held`: the event is now in the session's
    queue (False: it was already held, nothing changed). `lease`: this replica's lease when
    it owns the session (then `events` are the queue's events it claimed, in order);
    otherwise `owner` is the live replica that does (it was notified)."""

    held: bool = True
    lease: SessionLease | None = None
    owner: str | None = None
    events: tuple[ClaimedEvent, ...] = ()


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """One heartbeat's outcome: `alive` False when this replica was retired (a successor on
    the same host and profile took over); the session leases (key → token) and leader roles
    (role → token) it still holds, each renewed."""

    alive: bool
    sessions: dict[str, int] = field(default_factory=dict)
    roles: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SweepItem:
    """A session whose queue needs attention: `owner` is its live lease holder (None: free,
    released or expired, so any replica may take it)."""

    session_key: str
    owner: str | None


@dataclass(frozen=True, slots=True)
class ReviewRecord:
    """One background self-review of a turn, as it ended.

    `principal` is whose turn caused it (`<platform>:<user id>`); `trigger` why it ran
    (`tool_calls`, `iterations`); `status` `done`, `failed` or `skipped` (`reason` says why:
    `busy`, `over_budget`, `queue_full`, `timeout`, …). `skills` lists the skill writes that
    succeeded (`{"action", "name"}`), `memories` the memory writes (`{"action", "target",
    "entry"}`); tokens and model calls are the auxiliary model's, as it reported them."""

    id: str
    session_id: str | None
    principal: str
    trigger: str
    status: str
    reason: str | None = None
    skills: tuple[dict[str, str], ...] = ()
    memories: tuple[dict[str, str], ...] = ()
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    requested_at: float = 0.0
    finished_at: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens
