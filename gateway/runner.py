"""`GatewayRunner`: builds the components in order, supervises adapters, drains on signals.

Start-up order: CA bundle → (config and .env are loaded by the CLI) → single-instance lock →
storage → agent factory → compression → delivery, sessions, commands, inbound → adapters
launched (concurrently, each with a connect timeout) → health server (so /readyz answers 503
while they connect) → wait for the adapters → recovery of undelivered replies and unanswered
turns. Teardown runs in reverse; errors are collected, not raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

import structlog

from gateway.agents import AgentFactory
from gateway.commands.builtin import CommandServices, builtin_registry
from gateway.config import EXIT_CONFIG, EXIT_RESTART, HermesConfig
from gateway.delivery.service import DeliveryService, ReplyTarget
from gateway.delivery.stream import StreamSettings
from gateway.eventloop import loop_name
from gateway.health import HealthServer
from gateway.housekeeping import prune_forever
from gateway.inbound import InboundRouter
from gateway.metrics import GatewayMetrics
from gateway.paths import ProfilePaths
from gateway.pipeline.authz import AccessPolicy
from gateway.ports import BasePlatformAdapter, CursorStore
from gateway.process import (
    EXIT_FORCED,
    EXIT_STORAGE,
    SHUTDOWN_GRACE_S,
    hard_exit,
    settle_heap,
    shutdown_deadline,
    unsettle_heap,
)
from gateway.recovery import recover_held, recover_unanswered
from gateway.registry import create_adapter
from gateway.sdnotify import SdNotifier
from gateway.sessions import SessionManager
from gateway.sessions.inbox import DurableInbox
from gateway.supervisor import AdapterSupervisor, SupervisorSettings
from gateway.turns import ResetPolicy, TurnService, TurnSettings, build_turns
from gateway.watchdog import LoopWatchdog
from hermes_common.text import MediaPolicy

__all__ = ["ConfigurationError", "GatewayRunner", "detect_ca_bundle"]


log = structlog.get_logger("gateway.runner")


class ConfigurationError(Exception):
    """The configuration cannot run (exit 78: a service manager must not restart)."""


def detect_ca_bundle() -> str | None:
    """Point OpenSSL at certifi's bundle when the system gives none (minimal containers)."""
    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return os.environ.get("SSL_CERT_FILE")
    import ssl

    default = ssl.get_default_verify_paths()
    if default.cafile and os.path.exists(default.cafile):
        return default.cafile
    try:
        import certifi
    except ImportError:
        return None
    os.environ["SSL_CERT_FILE"] = certifi.where()
    return certifi.where()


class _StoreCursors(CursorStore):
    def __init__(self, store: Any, adapter: str) -> None:
        self._store = store
        self._prefix = f"{adapter}:"

    async def get(self, name: str) -> str | None:
        value: str | None = await self._store.get_cursor(self._prefix + name)
        return value

    async def set(self, name: str, value: str) -> None:
        await self._store.set_cursor(self._prefix + name, value)


class GatewayRunner:
    """One gateway process for one profile."""

    def __init__(
        self,
        config: HermesConfig,
        paths: ProfilePaths,
        *,
        adapters: Mapping[str, BasePlatformAdapter] | None = None,
        health_port: int | None = None,
        replace: bool = False,
        take_locks: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`clock` (epoch seconds) drives the session reset policy and start-up recovery;
        tests inject a controllable one."""
        self.config = config
        self._clock = clock
        self.paths = paths
        self._given_adapters = dict(adapters) if adapters is not None else None
        self._health_port = health_port
        self._replace = replace
        self._take_locks = take_locks
        self._stop = asyncio.Event()
        self._exit_code = 0
        self._locks: list[Any] = []
        self._cleanup: list[tuple[str, Any]] = []
        self.started_at = time.monotonic()
        self.store: Any = None
        self.adapters: dict[str, BasePlatformAdapter] = {}
        self.metrics = GatewayMetrics()
        self.manager: SessionManager | None = None
        self.inbox: DurableInbox | None = None
        self.delivery: DeliveryService | None = None
        self.turns: TurnService | None = None
        self.inbound: InboundRouter | None = None
        self.supervisor: AdapterSupervisor | None = None
        self.health: HealthServer | None = None
        self.compression: Any = None
        self.agents: AgentFactory | None = None
        self.notifier = SdNotifier.from_env(unset_environment=True)

    # -- public --------------------------------------------------------------------------
    def request_stop(self, code: int = 0) -> None:
        """Drain and exit with `code` (0 on SIGTERM/SIGINT, 75 on SIGUSR1)."""
        if not self._stop.is_set():
            self._exit_code = code
            self._stop.set()

    async def run(self) -> int:
        """Start, serve until a stop is requested, drain, tear down. Returns the exit code."""
        try:
            # First: a stop that lands while platforms are still connecting is a drain, not
            # the signal's default action (killed on the spot).
            self._install_signals()
            try:
                await self.start()
            except ConfigurationError as exc:
                log.error("configuration_error", error=str(exc))
                return EXIT_CONFIG
            settle_heap()
            await self._stop.wait()
            self.notifier.stopping("draining")
            return self._exit_code
        finally:
            # Also after an unexpected error: open storage threads would keep the process
            # from exiting. A teardown that hangs past the drain plus a grace period ends the
            # process anyway (stacks logged), so a supervisor never waits on a zombie.
            deadline = shutdown_deadline(self.config.gateway.drain_timeout_s + SHUTDOWN_GRACE_S)
            try:
                await self.shutdown()
            finally:
                deadline.cancel()
                unsettle_heap()

    async def start(self) -> None:
        detect_ca_bundle()
        if self._take_locks:
            await self._acquire_locks()
        await self._open_storage()
        self._build_agents()
        self._build_compression()
        self._build_adapters()
        self._build_services()
        await self._start_adapters()
        await self._start_health()  # probes answer (503) while adapters are still connecting
        await self._await_adapters()
        if self._stop.is_set():  # stopped while connecting: recovery waits for the next start
            return
        await self._recover()
        self.notifier.ready(f"{len(self.adapters)} adapter(s) connected")
        caches = (self.paths.cache,) + ((self.agents.tool_output_dir,) if self.agents else ())
        pruner = asyncio.create_task(
            prune_forever(self.store, self.config.gateway.ledger_retention_days, self._clock,
                          cache_dirs=caches,
                          cache_days=self.config.gateway.media.cache_retention_days),
            name="housekeeping")
        self._cleanup.append(("housekeeping", pruner.cancel))
        window = self.config.gateway.unhealthy_exit_s
        if window > 0 and self.adapters:
            escalate = asyncio.create_task(self._escalate_when_disconnected(window),
                                           name="escalation")
            self._cleanup.append(("escalation", escalate.cancel))
        if self.notifier.watchdog_interval():
            pinger = asyncio.create_task(self.notifier.run_watchdog(self.watchdog.healthy),
                                         name="sd-watchdog")
            self._cleanup.append(("sd-watchdog", pinger.cancel))

    async def shutdown(self) -> None:
        """Stop intake, drain running turns (`gateway.drain_timeout_s`), stop adapters in
        reverse order, close storage, release locks. Safe to call more than once."""
        if self.manager is not None:
            await self.manager.close(drain_timeout_s=self.config.gateway.drain_timeout_s)
        while self._cleanup:
            name, closer = self._cleanup.pop()
            try:
                result = closer()
                if asyncio.iscoroutine(result):
                    await result
            except Exception as exc:  # collect, never raise from teardown
                log.warning("teardown_error", component=name, error=type(exc).__name__)
        for lock in reversed(self._locks):
            with contextlib.suppress(Exception):
                lock.release()
        self._locks.clear()

    # -- steps ---------------------------------------------------------------------------
    async def _acquire_locks(self) -> None:
        from gateway import instance

        self._locks.append(await asyncio.to_thread(instance.acquire, self.paths.root,
                                                   replace=self._replace))
        for name, settings in self.config.platforms.enabled_blocks().items():
            credential = settings.credential()
            if credential:
                try:
                    self._locks.append(instance.acquire_token_lock(name, credential))
                except instance.TokenInUse as exc:
                    raise ConfigurationError(str(exc)) from exc

    async def _open_storage(self) -> None:
        from storage import StateStore

        self.store = await StateStore.open(self.paths.state_db)
        self._cleanup.append(("storage", self.store.close))
        self.store.on_writer_failure(self._storage_failed)

    def _storage_failed(self, exc: BaseException) -> None:
        """Nothing can be recorded any more: drain and exit so the service manager restarts
        the gateway with a fresh connection (never a zombie that accepts and loses events)."""
        log.error("storage_writer_stopped", error=type(exc).__name__, exit_code=EXIT_STORAGE)
        self.request_stop(EXIT_STORAGE)

    def _build_agents(self) -> None:
        try:
            self.agents = AgentFactory(self.config, self.paths)
        except KeyError as exc:
            raise ConfigurationError(str(exc)) from exc
        self._cleanup.append(("agents", self.agents.aclose))

    def _build_compression(self) -> None:
        if not self.config.compression.enabled:
            return
        try:
            from gateway.compression import build_compression
        except ImportError:
            return
        self.compression = build_compression(
            self.config, self.store, metrics=self.metrics, on_status=self._compression_status,
            prompt_builder=self._fresh_system_prompt)
        self._cleanup.append(("compression", self.compression.close))

    async def _fresh_system_prompt(self, session: Any) -> str:
        """A compaction child's system prompt: rebuilt, so memory saved since the session
        began reaches the model now (the prompt never changes mid-session otherwise)."""
        assert self.agents is not None
        hint = getattr(self.adapters.get(session.source), "format_hint", "")
        return await self.agents.system_prompt(platform_hint=hint)

    async def _compression_status(self, session_id: str, kind: str, text: str) -> None:
        """Tell the chat about an automatic compaction: the outcome, a failure (history is
        unchanged) or a deferral. "compacting" itself is not shown: the turn is already over."""
        log.info("compression_status", session_id=session_id, kind=kind)
        if kind == "compacting" or self.delivery is None or self.store is None:
            return
        session = await self.store.get_session(session_id)
        if session is None or not session.chat_id or session.source not in self.adapters:
            return
        await self.delivery.notify(ReplyTarget(session.source, session.chat_id,
                                               session.thread_id, None,
                                               session.chat_type or "dm"), text)

    def _build_adapters(self) -> None:
        if self._given_adapters is not None:
            self.adapters = dict(self._given_adapters)
            return
        for name, settings in self.config.platforms.enabled_blocks().items():
            try:
                self.adapters[name] = create_adapter(name, settings)
            except Exception as exc:
                raise ConfigurationError(f"platforms.{name}: {exc}") from exc

    def _policy(self) -> AccessPolicy:
        settings = {n: a.settings for n, a in self.adapters.items()}
        return AccessPolicy(per_platform={n: frozenset(s.allowed_users) for n, s in
                                          settings.items()},
                            allow_all={n: s.allow_all for n, s in settings.items()},
                            global_allowed=frozenset(str(u) for u in
                                                     self.config.gateway.allowed_users))

    def _platform_setting(self, platform: str,
                          attr: Literal["tool_progress", "require_mention"], default: Any) -> Any:
        """A running adapter's `tool_progress` / `require_mention` (its settings model's
        value; `default` when it has no adapter or leaves the key unset)."""
        adapter = self.adapters.get(platform)
        if adapter is None:
            return default
        s = adapter.settings
        value = s.tool_progress if attr == "tool_progress" else s.require_mention
        return default if value is None else value

    def _build_services(self) -> None:
        gw = self.config.gateway
        assert self.agents is not None
        self.delivery = DeliveryService(
            self.adapters, self.store,
            media=MediaPolicy.for_profile(self.paths.root, [str(d) for d in gw.media.allowed_dirs]),
            stream=StreamSettings(edit_interval_s=gw.streaming.edit_interval_s,
                                  enabled=gw.streaming.enabled),
        )
        self._cleanup.append(("delivery", self.delivery.close))
        self.turns = build_turns(
            self.store, self.delivery, self.agents,
            reset=ResetPolicy(mode=gw.session_reset.mode,
                              idle_minutes=gw.session_reset.idle_minutes,
                              daily_hour=gw.session_reset.daily_hour),
            format_hint=lambda p: a.format_hint if (a := self.adapters.get(p)) else "",
            settings=TurnSettings(
                tool_progress=lambda p: self._platform_setting(p, "tool_progress", gw.tool_progress),
            ),
            compression=self.compression,
            metrics=self.metrics,
            clock=self._clock,
        )
        self.inbox = DurableInbox(self.store)
        self.manager = SessionManager(
            self.turns, busy_mode=gw.busy_mode, mailbox_size=gw.mailbox_size,
            merge_window_s=gw.burst_merge_s, busy_ack_interval_s=gw.busy_ack_interval_s,
            inbox=self.inbox)
        commands = builtin_registry()
        services = CommandServices(
            store=self.store, manager=self.manager, sessions=self.turns.sessions,
            compression=self.compression, policy=self._policy(), model=self.agents.model,
            context_length=self.agents.context_length, registry=commands)
        self.inbound = InboundRouter(
            store=self.store, adapters=self.adapters, delivery=self.delivery,
            manager=self.manager, commands=commands, command_services=services,
            policy=services.policy,
            require_mention=lambda p: bool(self._platform_setting(p, "require_mention", True)),
            group_sessions_per_user=gw.group_sessions_per_user,
        )
        self._cleanup.append(("inbound", self.inbound.close))
        for adapter in self.adapters.values():
            with contextlib.suppress(Exception):
                adapter.commands_menu(commands.menu())

    async def _start_adapters(self) -> None:
        assert self.inbound is not None and self.delivery is not None
        await self.delivery.load_unreachable()
        self.paths.cache.mkdir(parents=True, exist_ok=True)
        self.supervisor = AdapterSupervisor(
            self.adapters, emit=self.inbound.emit, cache_dir=self.paths.cache,
            cursors_for=lambda name: _StoreCursors(self.store, name), metrics=self.metrics,
            max_attachment_bytes=int(self.config.gateway.media.max_inbound_mb * 1024 * 1024),
            settings=SupervisorSettings(
                connect_timeout_s=self.config.gateway.adapter_connect_timeout_s),
        )
        self.delivery.on_outbound = self.supervisor.note_outbound
        self._cleanup.append(("adapters", self.supervisor.stop))
        await self.supervisor.start()

    async def _await_adapters(self) -> None:
        """Until every adapter settled (or its connect timeout passed), or a stop came."""
        assert self.supervisor is not None
        started = asyncio.ensure_future(
            self.supervisor.wait_started(self.config.gateway.adapter_connect_timeout_s + 1))
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait((started, stop), return_when=asyncio.FIRST_COMPLETED)
        finally:
            started.cancel()
            stop.cancel()
        if self._stop.is_set():
            return
        if self.adapters and self.supervisor.all_fatal():
            raise ConfigurationError("every enabled adapter failed fatally at start "
                                     "(check tokens and platform settings)")

    async def _start_health(self) -> None:
        assert self.supervisor is not None
        hc = self.config.gateway.health
        port = hc.port if self._health_port is None else self._health_port
        watchdog = LoopWatchdog(metrics=self.metrics)
        await watchdog.__aenter__()
        self._cleanup.append(("watchdog", lambda: watchdog.__aexit__(None, None, None)))
        self.watchdog = watchdog
        self.health = HealthServer(
            supervisor=self.supervisor, metrics=self.metrics, storage_probe=self._storage_ok,
            host=hc.host, port=port, ephemeral=self._health_port == 0,
            status_providers={"sessions": self._sessions_status,
                              "compression": self._compression_snapshot},
            watchdog=watchdog, version=_version())
        try:
            await self.health.start()
        except OSError as exc:
            raise ConfigurationError(
                f"gateway.health: cannot listen on {hc.host}:{port} ({exc.strerror})") from exc
        self._cleanup.append(("health", self.health.stop))

    async def _escalate_when_disconnected(self, window: float) -> None:
        """The supervisor restarts adapters in-process; if none has been connected for
        `window` seconds anyway, exit 1 so the service manager restarts the whole process
        (RELIABILITY.md item 2: no silent zombie)."""
        assert self.supervisor is not None
        last_ok = time.monotonic()
        while True:
            await asyncio.sleep(min(10.0, max(window / 10, 0.05)))
            if any(st.state == "connected" for st in self.supervisor.snapshot()):
                last_ok = time.monotonic()
            elif time.monotonic() - last_ok >= window:
                log.error("no_adapter_connected", seconds=round(window),
                          action="exiting 1 so the service manager restarts the gateway")
                self.request_stop(1)
                return

    async def _storage_ok(self) -> bool:
        return bool(await self.store.writable())

    async def _sessions_status(self) -> dict[str, Any]:
        m = self.manager
        if m is None:
            return {}
        held = await self.store.inbound_held_count() if self.store is not None else 0
        return {"active": m.active_count, "queues": m.queue_depths(), "held": held}

    def _compression_snapshot(self) -> dict[str, Any]:
        return self.compression.status() if self.compression is not None else {"enabled": False}

    async def _recover(self) -> None:
        assert self.delivery is not None and self.manager is not None
        resent, expired = await self.delivery.recover()
        rerun = await recover_unanswered(self.store, self.manager, self.delivery,
                                         adapters=self.adapters, now=self._clock())
        assert self.inbox is not None
        held = await recover_held(self.inbox, self.manager, self.delivery,
                                  adapters=self.adapters, now=self._clock())
        log.info("gateway_ready", adapters=sorted(self.adapters), resent=resent,
                 expired=expired, rerun=rerun, requeued=held, host=socket.gethostname(),
                 event_loop=loop_name(asyncio.get_running_loop()))

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, self.request_stop, 0)
            loop.add_signal_handler(signal.SIGINT, self._on_interrupt)
            loop.add_signal_handler(signal.SIGUSR1, self.request_stop, EXIT_RESTART)

    def _on_interrupt(self) -> None:
        """Ctrl-C: drain and exit; Ctrl-C again while draining: exit now. Stored state is safe
        (every write is a committed transaction, replies are in the outbox, queued messages
        are held) and is picked up by the next start. A repeated SIGTERM (what service
        managers send) keeps draining."""
        if not self._stop.is_set():
            self.request_stop(0)
            return
        log.warning("second_interrupt_exit_now")
        hard_exit(EXIT_FORCED)


def _version() -> str:
    from gateway import __version__

    return __version__

