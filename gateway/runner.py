"""`GatewayRunner`: one gateway process for one profile.

The runner owns the lifecycle: locks, storage, agents and adapters, then the service graph
built by `gateway.wiring.wire` (every collaborator passed in at construction), then the
supervisor, the health server, start-up recovery and the background duties. Each step
registers its teardown on one `AsyncExitStack`, so `shutdown()` drains running turns and then
undoes start-up in reverse order, also after a start that failed half-way; teardown errors
are logged, never raised. Signals: SIGTERM/SIGINT drain and exit 0, SIGUSR1 exits 75.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from agent_core import threats
from agent_core.tools.toolsets import ToolSource
from gateway.agents import AgentFactory
from gateway.compression.hook import CompressionService
from gateway.config import EXIT_CONFIG, EXIT_RESTART, HermesConfig
from gateway.delivery.service import DeliveryService
from gateway.escalation import escalate_when_disconnected
from gateway.eventloop import loop_name
from gateway.health import HealthServer
from gateway.housekeeping import CacheLimits, prune_forever
from gateway.inbound import InboundRouter
from gateway.media import MediaReader
from gateway.media.replies import VoiceReplies
from gateway.memory import MemoryLoadError, build_memory
from gateway.metrics import GatewayMetrics
from gateway.paths import ProfilePaths
from gateway.ports import BasePlatformAdapter
from gateway.process import (
    EXIT_FORCED,
    EXIT_STORAGE,
    SHUTDOWN_GRACE_S,
    detect_ca_bundle,
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
from gateway.status import compression_status, replicas_status, sessions_status
from gateway.supervisor import AdapterSupervisor
from gateway.turns import TurnService
from gateway.watchdog import LoopWatchdog
from gateway.web_tools import WebTools
from gateway.wiring import GatewayParts, GatewayStore, wire
from hermes_common.waits import cancel_and_wait
from storage.errors import StorageError, StoreClosedError, StoreUnavailableError

if TYPE_CHECKING:
    from gateway.dashboard import DashboardServer
    from gateway.mcp import McpHub
    from gateway.replicas import ReplicaRuntime
    from storage.opening import AnyStore

__all__ = ["ConfigurationError", "GatewayRunner", "detect_ca_bundle"]

log = structlog.get_logger("gateway.runner")


class ConfigurationError(Exception):
    """The configuration cannot run (exit 78: a service manager must not restart)."""


class GatewayRunner:
    """One gateway process for one profile.

    `await runner.run()` starts, serves until a stop is requested, drains and tears down (the
    CLI's path). `async with runner:` does the same around a block (tests, embedding).
    Everything `start()` sets up is registered on one `AsyncExitStack`, so teardown runs in
    reverse order of start-up, also after a start that failed half-way; teardown errors are
    logged, never raised.
    """

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
        """`adapters` replaces the configured ones (tests); `health_port` overrides
        `gateway.health.port` (0: an ephemeral port); `clock` (epoch seconds) drives the
        session reset policy and start-up recovery."""
        self.config = config
        self.paths = paths
        self._clock = clock
        self._given_adapters = dict(adapters) if adapters is not None else None
        self._health_port = health_port
        self._replace = replace
        self._take_locks = take_locks
        self._stop = asyncio.Event()
        self._exit_code = 0
        self._stack = AsyncExitStack()
        self._parts: GatewayParts | None = None
        self.started_at = time.monotonic()
        self.metrics = GatewayMetrics()
        self.health: HealthServer | None = None
        self.dashboard: DashboardServer | None = None
        self.watchdog: LoopWatchdog | None = None
        #: The MCP servers' connections, when `mcp_servers` names any.
        self.mcp: McpHub | None = None
        self._media: MediaReader | None = None
        self.replica: ReplicaRuntime | None = None  # storage.backend: postgres, once started
        self._voice: VoiceReplies | None = None
        self.notifier = SdNotifier.from_env(unset_environment=True)

    # -- the parts, once started ---------------------------------------------------------
    @property
    def parts(self) -> GatewayParts:
        """The service graph; raises `RuntimeError` before `start()` built it."""
        if self._parts is None:
            raise RuntimeError("the gateway is not started")
        return self._parts

    @property
    def store(self) -> GatewayStore:
        return self.parts.store

    @property
    def adapters(self) -> Mapping[str, BasePlatformAdapter]:
        return self._parts.adapters if self._parts is not None else {}

    @property
    def manager(self) -> SessionManager:
        return self.parts.manager

    @property
    def inbox(self) -> DurableInbox:
        return self.parts.inbox

    @property
    def delivery(self) -> DeliveryService:
        return self.parts.delivery

    @property
    def turns(self) -> TurnService:
        return self.parts.turns

    @property
    def inbound(self) -> InboundRouter:
        return self.parts.inbound

    @property
    def supervisor(self) -> AdapterSupervisor:
        return self.parts.supervisor

    @property
    def compression(self) -> CompressionService | None:
        return self.parts.compression

    # -- public --------------------------------------------------------------------------
    def request_stop(self, code: int = 0) -> None:
        """Drain and exit with `code` (0 on SIGTERM/SIGINT, 75 on SIGUSR1)."""
        if not self._stop.is_set():
            self._exit_code = code
            self._stop.set()

    async def __aenter__(self) -> GatewayRunner:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

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
            except StoreUnavailableError as exc:  # a restart may find the database back
                log.error("storage_unavailable", error=str(exc), exit_code=EXIT_STORAGE)
                return EXIT_STORAGE
            except StorageError as exc:
                # The writer broke while start-up (recovery) was writing: the same exit as
                # once running (`_storage_failed`), not a traceback.
                if not isinstance(exc, StoreClosedError) and self._exit_code != EXIT_STORAGE:
                    raise
                log.error("storage_failed_during_start", error=type(exc).__name__,
                          exit_code=EXIT_STORAGE)
                return EXIT_STORAGE
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
        """Start-up in order: CA bundle → single-instance and bot-token locks → storage →
        agents → adapters and the service graph (`wire`) → adapters launched (concurrently,
        each with a connect timeout) → health server (so /readyz answers 503 while they
        connect) → wait for the adapters → recovery of undelivered replies, unanswered
        turns and held events → session intake opened (events that arrived since the adapters
        started were held and parked; they run now, in order) → background duties. Raises `ConfigurationError` for what a restart cannot
        fix (exit 78); whatever was set up is torn down by `shutdown()`."""
        detect_ca_bundle()
        stack = self._stack
        if self._take_locks:
            await self._acquire_locks(stack)
        store = await self._open_storage(stack)
        agents = self._build_agents(stack, await self._start_mcp(stack))
        await agents.acting.probe()
        if agents.memory is not None:  # bounded; a provider that is down is logged
            await agents.memory.start()
        adapters = self._build_adapters()
        parts = self._parts = wire(self.config, self.paths, store=store, agents=agents,
                                   adapters=adapters, metrics=self.metrics, clock=self._clock,
                                   media=self._media, voice=self._voice)
        if parts.compression is not None:
            stack.push_async_callback(_quietly, "compression", parts.compression.close)
        if parts.reviews is not None:
            stack.push_async_callback(_quietly, "reviews", parts.reviews.close)
        stack.push_async_callback(_quietly, "delivery", parts.delivery.close)
        stack.push_async_callback(_quietly, "inbound", parts.inbound.close)
        stack.push_async_callback(_quietly, "turns", parts.turns.aclose)
        for adapter in adapters.values():
            try:
                adapter.commands_menu(parts.commands.menu())
            except Exception as exc:  # noqa: BLE001 - a menu is cosmetic
                log.warning("commands_menu_failed", adapter=adapter.name,
                            error=type(exc).__name__)
        await parts.delivery.load_unreachable()
        if parts.replicas is not None:  # storage.backend: postgres (docs/scale-out.md)
            from gateway.replicas import replica_for

            self.replica = replica_for(parts, parts.replicas, self.config.gateway.replicas,
                                       home=str(self.paths.root), locked=self._take_locks,
                                       clock=self._clock, on_retired=lambda: self.request_stop(1))
            stack.push_async_callback(_quietly, "replica", self.replica.stop)
            await self.replica.start()
        self.paths.cache.mkdir(parents=True, exist_ok=True)
        stack.push_async_callback(_quietly, "adapters", parts.supervisor.stop)
        await parts.supervisor.start()
        await self._start_health(stack, parts)  # probes answer (503) while adapters connect
        await self._start_dashboard(stack, parts)
        await self._await_adapters(parts.supervisor)
        if self._stop.is_set():  # stopped while connecting: recovery waits for the next start
            return
        await self._recover(parts)
        await parts.manager.open_intake()  # events that arrived meanwhile, after recovered work
        if self.replica is not None:  # its heartbeat and sweep
            self.replica.run_duties()
        self.notifier.ready(f"{len(adapters)} adapter(s) connected")
        self._start_duties(stack, parts)

    async def shutdown(self) -> None:
        """Stop intake and drain running turns (`gateway.drain_timeout_s`), then tear down
        what `start()` set up in reverse order: background duties, health, adapters, the
        services, agents, storage, locks. Safe to call more than once; must not raise."""
        if self._parts is not None:
            await self._parts.manager.close(drain_timeout_s=self.config.gateway.drain_timeout_s)
        await self._stack.aclose()

    # -- steps ---------------------------------------------------------------------------
    async def _acquire_locks(self, stack: AsyncExitStack) -> None:
        from gateway import instance

        lock = await asyncio.to_thread(instance.acquire, self.paths.root, replace=self._replace)
        stack.callback(_release, "instance", lock)
        if self.config.storage.backend == "postgres":
            return  # replicas share bot tokens; one poller per token is a leader lease
        for name, settings in self.config.platforms.enabled_blocks().items():
            credential = settings.credential()
            if credential:
                try:
                    token_lock = instance.acquire_token_lock(name, credential)
                except instance.TokenInUse as exc:
                    raise ConfigurationError(str(exc)) from exc
                stack.callback(_release, f"token:{name}", token_lock)

    async def _open_storage(self, stack: AsyncExitStack) -> AnyStore:
        from gateway.storage_backend import open_configured_store

        store = await open_configured_store(self.config, self.paths.state_db)
        stack.push_async_callback(_quietly, "storage", store.close)
        store.on_writer_failure(self._storage_failed)
        return store

    def _storage_failed(self, exc: BaseException) -> None:
        """Nothing can be recorded any more: drain and exit so the service manager restarts
        the gateway with a fresh connection (never a zombie that accepts and loses events)."""
        log.error("storage_writer_stopped", error=type(exc).__name__, exit_code=EXIT_STORAGE)
        self.request_stop(EXIT_STORAGE)

    async def _start_mcp(self, stack: AsyncExitStack) -> list[ToolSource]:
        """The MCP servers of `mcp_servers` (none: the SDK is not even imported). Start-up
        waits for their first connection attempt at most `STARTUP_WAIT_S`; a server that is
        down is retried in the background."""
        servers = {n: s for n, s in self.config.mcp_servers.items() if s.enabled}
        if not servers:
            return []
        try:
            from gateway.mcp import McpHub
        except ImportError as exc:
            raise ConfigurationError("mcp_servers: the MCP client is not installed (pip "
                                     "install 'hermes-gateway[mcp]')") from exc
        hub = self.mcp = McpHub(servers, home=self.paths.root / "mcp", logs_dir=self.paths.logs)
        stack.push_async_callback(_quietly, "mcp", hub.stop)
        await hub.start()
        return [hub]

    def _build_agents(self, stack: AsyncExitStack,
                      tool_sources: Sequence[ToolSource] = ()) -> AgentFactory:
        try:
            web = WebTools.from_config(self.config)
            stack.push_async_callback(_quietly, "web_tools", web.aclose)
            self._media, self._voice = web.media, web.voice
            agents = AgentFactory(self.config, self.paths, tools=web.tools,
                                  tool_sources=tool_sources, memory=build_memory(self.config))
        except (KeyError, MemoryLoadError) as exc:
            raise ConfigurationError(str(exc)) from exc
        stack.push_async_callback(_quietly, "agents", agents.aclose)
        return agents

    def _build_adapters(self) -> dict[str, BasePlatformAdapter]:
        if self._given_adapters is not None:
            return dict(self._given_adapters)
        adapters: dict[str, BasePlatformAdapter] = {}
        for name, settings in self.config.platforms.enabled_blocks().items():
            try:
                adapters[name] = create_adapter(name, settings)
            except Exception as exc:
                raise ConfigurationError(f"platforms.{name}: {exc}") from exc
        return adapters

    async def _await_adapters(self, supervisor: AdapterSupervisor) -> None:
        """Until every adapter settled (or its connect timeout passed), or a stop came."""
        timeout = self.config.gateway.adapter_connect_timeout_s + 1
        started = asyncio.ensure_future(supervisor.wait_started(timeout))
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait((started, stop), return_when=asyncio.FIRST_COMPLETED)
        finally:
            started.cancel()
            stop.cancel()
        if self._stop.is_set():
            return
        if supervisor.adapters and supervisor.all_fatal():
            raise ConfigurationError("every enabled adapter failed fatally at start "
                                     "(check tokens and platform settings)")

    async def _start_health(self, stack: AsyncExitStack, parts: GatewayParts) -> None:
        hc = self.config.gateway.health
        port = hc.port if self._health_port is None else self._health_port
        self.watchdog = watchdog = await stack.enter_async_context(
            LoopWatchdog(metrics=self.metrics))

        async def storage_ok() -> bool:
            return await parts.store.writable()

        self.health = HealthServer(
            supervisor=parts.supervisor, metrics=self.metrics, storage_probe=storage_ok,
            host=hc.host, port=port, ephemeral=self._health_port == 0,
            status_providers={"sessions": sessions_status(parts, expose_ids=hc.expose_ids),
                              "compression": compression_status(parts, expose_ids=hc.expose_ids),
                              "replicas": replicas_status(self.replica, clock=self._clock),
                              **({"mcp": self.mcp.status} if self.mcp is not None else {})},
            watchdog=watchdog, version=_version(),
            token=hc.token.get_secret_value() if hc.token is not None else None)
        try:
            await self.health.start()
        except OSError as exc:
            raise ConfigurationError(
                f"gateway.health: cannot listen on {hc.host}:{port} ({exc.strerror})") from exc
        stack.push_async_callback(_quietly, "health", self.health.stop)

    async def _start_dashboard(self, stack: AsyncExitStack, parts: GatewayParts) -> None:
        dc = self.config.dashboard
        if not dc.enabled:
            return
        from gateway.dashboard.wire import dashboard_for

        self.dashboard = dashboard_for(dc, parts, _version(), replicas=self.replica,
                                       port=0 if self._health_port == 0 else None)
        try:
            await self.dashboard.start()
        except OSError as exc:
            raise ConfigurationError(
                f"dashboard: cannot listen on {dc.host}:{dc.port} ({exc.strerror})") from exc
        stack.push_async_callback(_quietly, "dashboard", self.dashboard.stop)

    def _start_duties(self, stack: AsyncExitStack, parts: GatewayParts) -> None:
        """Background duties of a ready gateway; each is cancelled at teardown."""
        gw = self.config.gateway
        spaces = parts.agents.spaces

        def caches() -> list[Path]:
            return [self.paths.cache, *spaces.tool_output_dirs()]

        mb = 1024 * 1024
        self._duty(stack, "housekeeping", prune_forever(
            parts.store, gw.ledger_retention_days, self._clock, cache_dirs=caches,
            cache_days=gw.media.cache_retention_days,
            cache_limits=CacheLimits(self.paths.cache, int(gw.media.cache_max_mb * mb),
                                     int(gw.media.chat_cache_max_mb * mb))))
        if gw.unhealthy_exit_s > 0 and parts.adapters:
            self._duty(stack, "escalation", escalate_when_disconnected(
                parts.supervisor, gw.unhealthy_exit_s, self.request_stop))
        if self.notifier.watchdog_interval() and self.watchdog is not None:
            self._duty(stack, "sd-watchdog", self.notifier.run_watchdog(self.watchdog.healthy))

    @staticmethod
    def _duty(stack: AsyncExitStack, name: str, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro, name=name)
        stack.push_async_callback(cancel_and_wait, task)

    async def _recover(self, parts: GatewayParts) -> None:
        resent, expired = await parts.delivery.recover()
        if self.replica is not None:  # sessions no live replica owns (docs/scale-out.md)
            rerun, held = 0, await self.replica.recover()
        else:
            rerun = await recover_unanswered(parts.store, parts.manager, parts.delivery,
                                             adapters=parts.adapters, now=self._clock())
            held = await recover_held(parts.inbox, parts.manager, parts.delivery,
                                      adapters=parts.adapters, now=self._clock())
        log.info("gateway_ready", adapters=sorted(parts.adapters), resent=resent,
                 expired=expired, rerun=rerun, requeued=held, parked=parts.manager.parked_count,
                 boot_id=parts.inbox.boot_id, host=socket.gethostname(),
                 event_loop=loop_name(asyncio.get_running_loop()))
        threats.warm(self.paths.cache)  # in a thread; the fold table is kept in cache/

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


async def _quietly(component: str, close: Callable[[], Awaitable[object]]) -> None:
    """Teardown step: errors are logged with the component's name, never raised."""
    try:
        await close()
    except Exception as exc:  # noqa: BLE001 - collect, never raise from teardown
        log.warning("teardown_error", component=component, error=type(exc).__name__)


def _release(name: str, lock: Releasable) -> None:
    try:
        lock.release()
    except Exception as exc:  # noqa: BLE001 - the OS drops it at exit anyway
        log.warning("instance_lock_release_failed", lock=name, error=type(exc).__name__)


class Releasable(Protocol):
    def release(self) -> None: ...


def _version() -> str:
    from gateway import __version__

    return __version__

