"""Builds the inbound pipeline and the two lanes after it: slash commands and sessions."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from gateway.approvals import APPROVE_ACTION, DENY_ACTION
from gateway.commands.access import GroupCommands, refusal
from gateway.commands.context import CommandContext, CommandServices
from gateway.commands.registry import Command, CommandRegistry, parse_command
from gateway.delivery.service import DeliveryService, ReplyTarget
from gateway.events import InteractionEvent, MessageEvent, UserRef
from gateway.pipeline import Inbound, Next, Pipeline
from gateway.pipeline.authz import AccessPolicy, Authorize
from gateway.pipeline.filters import Dedup, drop_self_and_bots
from gateway.pipeline.mention import MentionGate
from gateway.ports import BasePlatformAdapter, Capabilities
from gateway.principals import UserSpaces
from gateway.sessions import SessionManager, session_key
from gateway.sessions.inbox import EventNotHeldError, payload_of
from storage.errors import EventPendingError, StorageError
from storage.ports import DedupLedger, PairingStore, Reachability

if TYPE_CHECKING:
    from gateway.replicas.relay import ReplyRelay

__all__ = ["InboundRouter", "InboundStore", "PairingDesk"]

log = structlog.get_logger("gateway.inbound")

#: What storage raises when it cannot write (the event was not recorded).
STORAGE_FAILURES = (StorageError, sqlite3.Error, OSError)
#: Failed record attempts remembered (a long outage fails every event; beyond this many a
#: redelivery of one is reclaimed only after `record_if_new`'s pending window).
_UNSURE_MAX = 10_000

MAX_PENDING_CODES_PER_HOUR = 3
#: Button actions and the command each one stands for (`/<command> <button value>`).
INTERACTION_COMMANDS = {APPROVE_ACTION: "approve", DENY_ACTION: "deny"}


class InboundStore(DedupLedger, PairingStore, Reachability, Protocol):
    """What the inbound path records: dedup, pairing, chats that became reachable again."""


class PairingDesk:
    """`PairingLedger` over the state store: codes hashed, at most 3 per user per hour."""

    def __init__(self, store: PairingStore, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock

    async def is_paired(self, platform: str, user_id: str) -> bool:
        return bool(await self._store.is_approved(platform, user_id))

    async def issue_pairing_code(self, platform: str, user_id: str,
                                 display: str | None) -> str | None:
        since = self._clock() - 3600
        if await self._store.count_pairing_codes_since(platform, user_id, since) >= \
                MAX_PENDING_CODES_PER_HOUR:
            return None
        code: str = await self._store.create_pairing_code(platform, user_id, display=display)
        return code


class InboundRouter:
    """`emit()` for every adapter: durable dedup first, then policy, then a lane.

    It returns as soon as the event is durably recorded and routed; command handlers and
    notices run in their own tasks so a slow reply never holds up an adapter's intake.

    With replicas (`SessionManager.replicated`) a command acts where its session lives: it
    is dispatched into the session's line like a message, and the replica that owns the
    session runs it (this router is its manager's `CommandSink`). Commands of adapters
    whose replies only this process can write (`Capabilities.reply_anywhere` False: an HTTP
    response, a local terminal) run here, as on one gateway.
    """

    def __init__(
        self,
        *,
        store: InboundStore,
        adapters: Mapping[str, BasePlatformAdapter],
        delivery: DeliveryService,
        manager: SessionManager,
        commands: CommandRegistry,
        command_services: CommandServices,
        policy: AccessPolicy,
        require_mention: Callable[[str], bool],
        group_sessions_per_user: bool = True,
        group_commands: GroupCommands = "admins",
        spaces: UserSpaces | None = None,
        boot_id: str | None = None,
        shield_intake: bool = False,
        relay: ReplyRelay | None = None,
    ) -> None:
        """`spaces`: inbound attachments are moved into their chat's cache folder there.
        `boot_id` (this process's lifetime) claims each dedup record until the event's fate
        is stored, so an event cut off between its record and its hold by a crash is taken
        again when the platform redelivers it (docs/reliability.md)."""
        self._store = store
        self._adapters = adapters
        self._delivery = delivery
        self._manager = manager
        self._commands = commands
        self._services = command_services
        self._per_user = group_sessions_per_user
        self._policy = policy
        self._group_commands: GroupCommands = group_commands
        self._spaces = spaces
        self._shield = shield_intake
        self._relay = relay
        self._tasks: set[asyncio.Task[Any]] = set()
        self.routed = 0
        self._ledger = _StoreLedger(store, boot_id)
        self._authorize = Authorize(policy, PairingDesk(store), self._reply)
        self._mention = MentionGate(require_mention)
        self._pipeline = Pipeline([
            drop_self_and_bots,
            self._held_lane,
            Dedup(self._ledger),
            self._clear_unreachable,
            self._authorize,
            self._mention,
            self._command_lane,
            self._route,
        ])
        manager.route_commands(self)

    def _caps(self, event: MessageEvent) -> Capabilities:
        adapter = self._adapters.get(event.platform)
        return adapter.capabilities if adapter is not None else Capabilities()

    async def emit(self, event: MessageEvent) -> bool:
        """Must not raise for a bad event: it is logged and dropped (after being recorded).

        Raises when storage failed before the event was recorded or held (disk full,
        database locked beyond the retry budget, the store closing under a stop): the adapter
        must not acknowledge it (no offset moved, no ack sent, no cursor advanced), so the
        platform delivers it again."""
        item = Inbound(event=event, capabilities=self._caps(event))
        try:
            if self._shield:
                # Replicas: an adapter stopped mid-emit (its leader lease moved) must not
                # cut the event off between its dedup record, which this live replica's
                # claim keeps, and its hold: the redelivery to the new leader would be a
                # repeat and the event lost. The event's intake finishes on its own.
                await asyncio.shield(self._spawn_intake(item))
            else:
                await self._pipeline.run(item)
        except Exception as exc:
            if isinstance(exc, EventPendingError):
                log.info("inbound_pending_elsewhere", platform=event.platform,
                         event_id=event.event_id)
                raise
            if isinstance(exc, EventNotHeldError):
                # Recorded, not held: refused like an event not recorded, and its record is
                # reclaimed when the platform delivers it again (to this process or, after
                # a restart, the next one: a dead boot's claim is taken over anyway).
                self._ledger.reclaim_next(event.platform, event.event_id)
                log.warning("inbound_not_held", platform=event.platform,
                            event_id=event.event_id)
                raise
            if not item.recorded and isinstance(exc, STORAGE_FAILURES):
                log.warning("inbound_not_recorded", platform=event.platform,
                            event_id=event.event_id, error=type(exc).__name__)
                raise
            log.exception("inbound_failed", platform=event.platform, event_id=event.event_id)
        if item.dropped and item.dropped != "duplicate":
            self._spawn(self._delivery.turn_complete(ReplyTarget.of(event), ok=False,
                                                     error=f"not processed: {item.dropped}"),
                        "complete")
        if item.new and not item.notes.get("routed"):
            # Its fate is decided without a hold (dropped, a command): the record is settled.
            # Not awaited: lost in a crash, a redelivery is only dropped or run again.
            self._spawn(self._store.inbound_settle([(event.platform, event.event_id)]),
                        "settle")
        return item.new

    def _spawn_intake(self, item: Inbound) -> asyncio.Task[Inbound]:
        task = asyncio.create_task(self._pipeline.run(item), name="inbound-intake")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def interact(self, event: InteractionEvent) -> bool:
        """A button press: handled as its command sent by the presser in that chat, through
        the same pipeline (dedup by the press's id, authorization, command rules). Must not
        raise; an unknown action is logged and dropped."""
        command = INTERACTION_COMMANDS.get(event.action)
        if command is None:
            log.info("interaction_unknown", platform=event.platform, action=event.action[:64])
            return False
        value = " ".join(event.value.split())[:64]
        user = UserRef(id=event.user.id, name=event.user.name, is_bot=event.user.is_bot,
                       is_self=event.user.is_self)
        return await self.emit(MessageEvent(
            platform=event.platform, event_id=f"interaction:{event.event_id}",
            chat_id=event.chat_id, chat_type=event.chat_type, thread_id=event.thread_id,
            user=user, text=f"/{command} {value}".strip(), reply_to=event.message_id,
            reply_to_bot=True, mentions_bot=True, timestamp=event.timestamp))

    async def _reply(self, event: MessageEvent, text: str) -> None:
        self._spawn(self._delivery.notify(ReplyTarget.of(event), text), "notice")

    def _spawn(self, coro: Coroutine[Any, Any, object], kind: str) -> None:
        task = asyncio.create_task(coro, name=f"inbound-{kind}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _goes_straight_to_a_session(self, item: Inbound) -> bool:
        """Known before any lookup to end in a session's line: a plain text message of an
        allow-listed user (or a trusted adapter), addressed to the bot where that is
        needed, in a chat not marked unreachable, on one gateway with a durable inbox."""
        ev = item.event
        return (self._ledger.boot_id is not None and self._manager.holds_in_inbox
                and not ev.attachments and not ev.skipped and bool(ev.text.strip())
                and self._authorize.admits_now(item) and self._mention.passes(item)
                and not self._delivery.maybe_unreachable(ev.platform, ev.chat_id)
                and self._parse(ev) is None)

    async def _held_lane(self, item: Inbound, nxt: Next) -> None:
        """The common event (`_goes_straight_to_a_session`) is recorded for dedup and held
        for its session in one write; every other one goes through dedup, policy and the
        command lane one step at a time."""
        if not self._goes_straight_to_a_session(item):
            await nxt()
            return
        ev = item.event
        key = session_key(ev, group_sessions_per_user=self._per_user)
        item.new = await self._ledger.record_and_hold(ev, key)
        item.recorded = True
        if item.new and self._manager.taken_by_recovery(ev):
            # Taken back after a failed attempt (`reclaim_own`), but the claim of this boot
            # on it is recovery's, which queued it already: a repeat, as on the other lane.
            log.info("inbound_already_taken", session_key=key)
            item.new = False
        if not item.new:
            item.drop("duplicate")
            return
        self.routed += 1
        item.notes["routed"] = True  # held: its release settles the record
        log.debug("inbound_routed", platform=ev.platform, event_id=ev.event_id, session_key=key)
        await self._manager.dispatch(key, ev, held=True)

    async def _clear_unreachable(self, item: Inbound, nxt: Next) -> None:
        if self._delivery.maybe_unreachable(item.event.platform, item.event.chat_id):
            await self._store.clear_unreachable(item.event.platform, item.event.chat_id)
            self._delivery.forget_unreachable(item.event.platform, item.event.chat_id)
        await nxt()

    def _bot_username(self, platform: str) -> str | None:
        """Adapters that know their bot's @name expose it as `bot_username`, so commands
        addressed to another bot (`/help@otherbot`) are not taken as ours."""
        name = getattr(self._adapters.get(platform), "bot_username", None)
        return name if isinstance(name, str) and name else None

    def _parse(self, event: MessageEvent) -> tuple[Command, str] | None:
        parsed = parse_command(event.text, bot_username=self._bot_username(event.platform))
        command = self._commands.resolve(parsed.name) if parsed else None
        return None if parsed is None or command is None else (command, parsed.args)

    def _is_admin(self, event: MessageEvent, caps: Capabilities) -> bool:
        return caps.operator or self._policy.is_admin(event.platform, event.user.id)

    async def _command_lane(self, item: Inbound, nxt: Next) -> None:
        found = self._parse(item.event)
        if found is None:
            await nxt()
            return
        command, args = found
        ev = item.event
        key = session_key(ev, group_sessions_per_user=self._per_user)
        item.notes["command"] = command.name
        if self._manager.replicated and item.capabilities.reply_anywhere:
            # To the session's owner, through its line (held: never lost, run once).
            item.notes["routed"] = True  # its hold settles the record
            log.debug("command_dispatched", command=command.name, session_key=key)
            await self._manager.dispatch(key, ev)
            return
        admin = self._is_admin(ev, item.capabilities)
        self._spawn(self._run_command(ev, key, command, args, admin), "command")

    # -- CommandSink (replicas: the commands this replica claimed from its sessions' lines) --
    def is_command(self, event: MessageEvent) -> bool:
        return self._parse(event) is not None

    async def run_command(self, key: str, event: MessageEvent) -> None:
        """The receiving replica passed the event's policy already; the admin flag is
        decided again here from the same configuration (`gateway.admins`; an operator
        adapter's commands are never handed over)."""
        found = self._parse(event)
        if found is None:
            return
        command, args = found
        await self._run_command(event, key, command, args,
                                self._is_admin(event, self._caps(event)))

    async def _run_command(self, event: MessageEvent, key: str, command: Command,
                           args: str, is_admin: bool) -> None:
        target = ReplyTarget.of(event)
        ok = True
        text: str | None
        await self._manager.wait_open()  # after start-up recovery, like the session lane
        try:
            refused = refusal(command, event, args, is_admin=is_admin,
                              group_commands=self._group_commands)
            if refused is not None:
                log.info("command_refused", command=command.name, platform=event.platform,
                         chat_type=event.chat_type.value)
                text = refused
            elif not command.busy_ok and self._manager.is_busy(key):
                text = f"⏳ The agent is working on a reply. Send /stop first, then /{command.name}."
            else:
                text = await command.handler(
                    CommandContext(event, key, args, self._services, is_admin=is_admin))
            if text:
                await self._delivery.notify(target, text)
        except Exception as exc:
            ok = False
            log.exception("command_failed", command=command.name)
            await self._delivery.notify(target, f"⚠️ /{command.name} failed ({type(exc).__name__}).")
        finally:
            await self._delivery.turn_complete(target, ok=ok)

    async def _route(self, item: Inbound, nxt: Next) -> None:
        ev = item.event
        if not ev.text.strip() and not ev.attachments and not ev.skipped:
            item.drop("empty")
            return
        key = session_key(ev, group_sessions_per_user=self._per_user)
        if ev.attachments and self._spaces is not None:
            ev = await asyncio.to_thread(self._spaces.adopt_attachments, ev)
        self.routed += 1
        item.notes["routed"] = True  # held by the session lane: its hold settles the record
        log.debug("inbound_routed", platform=ev.platform, event_id=ev.event_id, session_key=key)
        outcome = await self._manager.dispatch(key, ev)
        if (self._relay is not None and not item.capabilities.reply_anywhere
                and outcome in ("handed_over", "parked")):
            # Another replica may run it: its final comes back through the outbox.
            self._relay.follow(ev)

    async def close(self) -> None:
        if self._relay is not None:
            await self._relay.close()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


class _StoreLedger:
    """The pipeline's `Dedup` ledger over the state store.

    An attempt to record that failed (a commit lost with the connection may still have
    stored the record) is remembered, so that the platform's redelivery of that event to
    this process reclaims the record as new instead of dropping it as a repeat."""

    def __init__(self, store: DedupLedger, boot_id: str | None) -> None:
        self._store = store
        self.boot_id = boot_id
        self._unsure: set[tuple[str, str]] = set()

    async def record_inbound(self, platform: str, event_id: str) -> bool:
        reclaim = self._take_unsure(platform, event_id)
        try:
            return await self._store.record_if_new(platform, event_id, claimed_by=self.boot_id,
                                                   reclaim_own=reclaim)
        except EventPendingError:
            raise
        except Exception:
            self.reclaim_next(platform, event_id)
            raise

    async def record_and_hold(self, event: MessageEvent, session_key: str) -> bool:
        """`record_inbound` and, for a new event, its hold for `session_key` by this boot,
        in one write (only with a boot id)."""
        if self.boot_id is None:
            raise RuntimeError("record_and_hold needs this process's boot id")
        reclaim = self._take_unsure(event.platform, event.event_id)
        try:
            return await self._store.record_and_hold(
                event.platform, event.event_id, session_key, payload_of(event),
                claimed_by=self.boot_id, reclaim_own=reclaim)
        except EventPendingError:
            raise
        except Exception:
            self.reclaim_next(event.platform, event.event_id)
            raise

    def _take_unsure(self, platform: str, event_id: str) -> bool:
        """Whether this delivery reclaims the record. Taken out before the call: of two
        redeliveries at once, only one reclaims it."""
        key = (platform, event_id)
        reclaim = key in self._unsure
        self._unsure.discard(key)
        return reclaim

    def reclaim_next(self, platform: str, event_id: str) -> None:
        """The next delivery of this event reclaims its record (this process's attempt to
        take it in failed after the record may have been stored)."""
        if len(self._unsure) < _UNSURE_MAX:
            self._unsure.add((platform, event_id))
