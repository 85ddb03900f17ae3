"""`wire()`: the one place that builds the gateway's service graph from its parts.

Every component gets its collaborators at construction, in dependency order; nothing is
patched onto an object afterwards. The runner owns the lifecycle (start, drain, teardown) of
what is built here; nothing here starts a task or opens a socket.

    store, agents, adapters (given)
      → activity → delivery → compression (notices through delivery) → reviews
      → turns → inbox → sessions (manager) → commands → inbound → supervisor (emit = inbound)
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import structlog

from gateway.activity import AdapterActivity
from gateway.agents import AgentFactory
from gateway.approvals import ApprovalDesk
from gateway.commands.builtin import CommandServices, builtin_registry
from gateway.commands.registry import CommandRegistry
from gateway.compression.hook import CompressionService
from gateway.config import HermesConfig
from gateway.delivery.files import OutboundFiles
from gateway.delivery.service import DeliveryService, ReplyTarget
from gateway.delivery.stream import StreamSettings
from gateway.events import Principal
from gateway.inbound import InboundRouter
from gateway.media import MediaReader
from gateway.media.replies import VoiceReplies
from gateway.metrics import GatewayMetrics
from gateway.paths import ProfilePaths
from gateway.pipeline.authz import AccessPolicy
from gateway.ports import BasePlatformAdapter, CursorStore, ToolProgress
from gateway.principals import UserSpaces, audience_of
from gateway.review import ReviewService, build_reviews
from gateway.sessions import SessionManager
from gateway.sessions.inbox import DurableInbox
from gateway.supervision_types import InboundMediaLimits
from gateway.supervisor import AdapterSupervisor, SupervisorSettings
from gateway.turns import ResetPolicy, TurnService, TurnSettings, build_turns
from gateway.usage_tally import UsageTally
from storage.ports import (
    ApprovalLedger,
    CompactionCommitter,
    CursorLedger,
    DedupLedger,
    GuardStore,
    HeldEvents,
    LeaseStore,
    LineageStore,
    LiveTranscript,
    Maintenance,
    MessageLog,
    OutboxLedger,
    PairingStore,
    Reachability,
    ReplicaLedger,
    Reports,
    ReviewLedger,
    SearchIndex,
    SessionReader,
    SessionWriter,
    UsageLedger,
)
from storage.types import Session

if TYPE_CHECKING:  # the replicas runtime is imported only by a PostgreSQL-backed gateway
    from gateway.replicas.gates import LeaderGates
    from gateway.replicas.relay import ReplyReader, ReplyRelay
    from gateway.replicas.sessions import ReplicaSessions

__all__ = ["GatewayParts", "GatewayStore", "StoreCursors", "access_policy", "outbound_files",
           "wire"]

log = structlog.get_logger("gateway.wiring")


class GatewayStore(SessionReader, SessionWriter, MessageLog, LiveTranscript, LineageStore,
                   SearchIndex, UsageLedger, GuardStore, LeaseStore, CompactionCommitter,
                   DedupLedger, HeldEvents, PairingStore, Reachability, OutboxLedger,
                   CursorLedger, Maintenance, ApprovalLedger, Reports, ReplicaLedger,
                   ReviewLedger,
                   Protocol):
    """Every storage port the running gateway uses (the state store implements them all).
    Each component below is handed this store but typed with the narrower port it needs."""


class StoreCursors(CursorStore):
    """An adapter's durable cursors, namespaced by adapter name in the store."""

    def __init__(self, store: CursorLedger, adapter: str) -> None:
        self._store = store
        self._prefix = f"{adapter}:"

    async def get(self, name: str) -> str | None:
        return await self._store.get_cursor(self._prefix + name)

    async def set(self, name: str, value: str) -> None:
        await self._store.set_cursor(self._prefix + name, value)


@dataclass(frozen=True, slots=True)
class GatewayParts:
    """The built service graph (nothing started yet)."""

    store: GatewayStore
    agents: AgentFactory
    adapters: Mapping[str, BasePlatformAdapter]
    activity: AdapterActivity
    delivery: DeliveryService
    compression: CompressionService | None
    reviews: ReviewService | None
    turns: TurnService
    inbox: DurableInbox
    manager: SessionManager
    commands: CommandRegistry
    inbound: InboundRouter
    supervisor: AdapterSupervisor
    #: The tokens the turn layer stored since start, for the dashboard's chart.
    tally: UsageTally
    #: This replica's session leases (`storage.backend: postgres`); None on SQLite.
    replicas: ReplicaSessions | None = None
    #: The leader leases of its exclusive-intake adapters (polling, Socket Mode, Discord).
    leaders: LeaderGates | None = None


def access_policy(config: HermesConfig,
                  adapters: Mapping[str, BasePlatformAdapter]) -> AccessPolicy:
    """Allow-lists from each adapter's settings and `gateway.allowed_users`."""
    settings = {n: a.settings for n, a in adapters.items()}
    return AccessPolicy(
        per_platform={n: frozenset(s.allowed_users) for n, s in settings.items()},
        allow_all={n: s.allow_all for n, s in settings.items()},
        global_allowed=frozenset(str(u) for u in config.gateway.allowed_users),
        admins={n: frozenset(ids) for n, ids in config.gateway.admins.items()})


def outbound_files(config: HermesConfig, paths: ProfilePaths,
                   spaces: UserSpaces) -> OutboundFiles:
    """What a reply may attach: the chat's cached attachments, the answered user's
    workspace, `gateway.media.allowed_dirs`; never the profile's secrets or database."""
    media = config.gateway.media

    def roots_for(platform: str, chat_id: str, user_id: str | None) -> list[Path]:
        roots = [spaces.chat_cache(platform, chat_id)]
        if user_id is not None:
            roots.append(spaces.workspace(Principal(platform, user_id)))
        return roots

    root = paths.root
    return OutboundFiles(
        roots_for, extra_dirs=list(media.allowed_dirs),
        protected_files=[root / n for n in (".env", "state.db", "state.db-wal", "state.db-shm")],
        max_bytes=int(media.max_outbound_mb * 1024 * 1024))


def wire(
    config: HermesConfig,
    paths: ProfilePaths,
    *,
    store: GatewayStore,
    agents: AgentFactory,
    adapters: Mapping[str, BasePlatformAdapter],
    metrics: GatewayMetrics,
    clock: Callable[[], float] = time.time,
    media: MediaReader | None = None,
    voice: VoiceReplies | None = None,
) -> GatewayParts:
    """Build the gateway's components for `adapters` over `store`. Raises what the
    compression factory raises for a provider it cannot use (a validated config has none)."""
    gw = config.gateway

    def format_hint(platform: str) -> str:
        adapter = adapters.get(platform)
        return adapter.format_hint if adapter is not None else ""

    def tool_progress(platform: str) -> ToolProgress:
        adapter = adapters.get(platform)
        own = adapter.settings.tool_progress if adapter is not None else None
        return own if own is not None else gw.tool_progress

    def require_mention(platform: str) -> bool:
        adapter = adapters.get(platform)
        return adapter.settings.require_mention if adapter is not None else True

    activity = AdapterActivity(metrics)
    replicated = config.storage.backend == "postgres"
    if replicated:  # several replicas on one database (docs/scale-out.md)
        from gateway.replicas.gates import LeaderGates
        from gateway.replicas.runtime import new_replica_id
        from gateway.replicas.sessions import ReplicaSessions
    # claims what this process takes (held events, finals); with replicas, the replica id
    boot_id = new_replica_id() if replicated else uuid.uuid4().hex
    delivery = DeliveryService(
        adapters, store,
        files=outbound_files(config, paths, agents.spaces),
        stream=StreamSettings(edit_interval_s=gw.streaming.edit_interval_s,
                              enabled=gw.streaming.enabled),
        on_outbound=activity.note_outbound, boot_id=boot_id,
    )
    compression = _compression(config, store, agents, delivery, adapters, metrics, format_hint)
    approvals = ApprovalDesk(store, delivery, clock=clock, shared=replicated)
    reviews = build_reviews(config, store, agents, clock=clock)
    tally = UsageTally()
    turns = build_turns(
        store, delivery, agents,
        reset=ResetPolicy(mode=gw.session_reset.mode, idle_minutes=gw.session_reset.idle_minutes,
                          daily_hour=gw.session_reset.daily_hour),
        format_hint=format_hint,
        settings=TurnSettings(tool_progress=tool_progress),
        compression=compression, metrics=metrics, clock=clock,
        approvals=approvals, approval_timeout_s=config.tools.terminal.approval_timeout_s,
        media=(media or MediaReader()).with_workspace(agents.spaces.workspace),
        voice=voice,
        reviews=reviews,
        tally=tally,
    )
    inbox = DurableInbox(store, boot_id=boot_id)
    replicas = (ReplicaSessions(store, boot_id, lease_s=gw.replicas.lease_s,
                                delivery=delivery, adapters=adapters, clock=clock)
                if replicated else None)
    manager = SessionManager(
        turns, busy_mode=gw.busy_mode, mailbox_size=gw.mailbox_size,
        merge_window_s=gw.burst_merge_s, busy_ack_interval_s=gw.busy_ack_interval_s,
        inbox=inbox, intake_open=False,  # opened by the runner after start-up recovery
        ownership=replicas)
    commands = builtin_registry()
    policy = access_policy(config, adapters)
    services = CommandServices(
        store=store, manager=manager, sessions=turns.sessions, compression=compression,
        policy=policy, model=agents.model, context_length=agents.context_length,
        registry=commands, approvals=approvals, tools=turns.builder,
        skills=turns.builder)
    inbound = InboundRouter(
        store=store, adapters=adapters, delivery=delivery, manager=manager, commands=commands,
        command_services=services, policy=policy, require_mention=require_mention,
        group_sessions_per_user=gw.group_sessions_per_user, group_commands=gw.group_commands,
        spaces=agents.spaces, boot_id=boot_id, shield_intake=replicated,
        relay=_relay(store, adapters) if replicated else None,
    )
    leaders = (LeaderGates(store, boot_id, adapters, lease_s=gw.replicas.lease_s)
               if replicated else None)
    supervisor = AdapterSupervisor(
        adapters, emit=inbound.emit, gates=leaders.gates if leaders is not None else None, interact=inbound.interact, cache_dir=paths.cache,
        cursors_for=lambda name: StoreCursors(store, name), metrics=metrics, activity=activity,
        max_attachment_bytes=int(gw.media.max_inbound_mb * 1024 * 1024),
        media=InboundMediaLimits(max_message_bytes=int(gw.media.max_message_mb * 1024 * 1024),
                                 max_images=gw.media.max_images_per_message,
                                 download_timeout_s=gw.media.download_timeout_s),
        settings=SupervisorSettings(connect_timeout_s=gw.adapter_connect_timeout_s),
    )
    return GatewayParts(store=store, agents=agents, adapters=adapters, activity=activity,
                        delivery=delivery, compression=compression, reviews=reviews,
                        turns=turns, inbox=inbox,
                        manager=manager, commands=commands, inbound=inbound,
                        supervisor=supervisor, tally=tally, replicas=replicas,
                        leaders=leaders)


def _compression(
    config: HermesConfig, store: GatewayStore, agents: AgentFactory, delivery: DeliveryService,
    adapters: Mapping[str, BasePlatformAdapter], metrics: GatewayMetrics,
    format_hint: Callable[[str], str],
) -> CompressionService | None:
    if not config.compression.enabled:
        return None
    from gateway.compression import build_compression

    async def child_prompt(session: Session) -> str:
        """A compaction child's system prompt: rebuilt, so memory saved since the session
        began reaches the model now (the prompt never changes mid-session otherwise)."""
        return await agents.system_prompt(platform_hint=format_hint(session.source),
                                          audience=audience_of(session),
                                          platform=session.source or None,
                                          chat_id=session.chat_id)

    async def notify_chat(session_id: str, kind: str, text: str) -> None:
        """Tell the chat about an automatic compaction: the outcome, a failure (history is
        unchanged) or a deferral. "compacting" itself is not shown: the turn is over."""
        log.info("compression_status", session_id=session_id, kind=kind)
        if kind == "compacting":
            return
        session = await store.get_session(session_id)
        if session is None or not session.chat_id or session.source not in adapters:
            return
        await delivery.notify(ReplyTarget(session.source, session.chat_id, session.thread_id,
                                          None, session.chat_type or "dm"), text)

    return build_compression(config, store, metrics=metrics, on_status=notify_chat,
                             prompt_builder=child_prompt, memory=agents.memory)


def _relay(store: ReplyReader, adapters: Mapping[str, BasePlatformAdapter]) -> ReplyRelay:
    """Answers this replica's API requests whose sessions another replica runs."""
    from gateway.replicas.relay import RELAY_TIMEOUT_S, ReplyRelay

    return ReplyRelay(store, adapters, timeout_s=RELAY_TIMEOUT_S)
