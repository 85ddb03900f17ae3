"""One MCP server: connect, keep the tool list fresh, call tools, reconnect when it dies.

A connection is owned by one task (`mcp:<server>`) that enters the SDK's `Client` and stays
inside it: the SDK's transports run in anyio task groups that must be left by the task that
entered them. Turns call tools from their own tasks through `call()`, which never waits
longer than its timeout and never raises anything but `McpToolError`.

The owner task's loop: connect (start the process or open the HTTP session, handshake, list
the tools; all within `connect_timeout_s`) → serve (refresh the tool list when the server
says it changed; ping every `keepalive_s`, and at once after a call timed out; leave when a
call or ping finds the connection closed) → back off (`hermes_common.backoff`) → again,
until `stop()`. Nothing a server does (crash, hang, garbage) escapes this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

import mcp_types as mt
import structlog
from mcp import Client, MCPError, StdioServerParameters

from agent_core.threats import scan
from gateway.config.mcp import McpServerConfig
from gateway.mcp.results import MAX_DESCRIPTION_CHARS, result_text
from gateway.mcp.stdio import DEFAULT_MAX_MESSAGE_BYTES, bounded_stdio
from hermes_common.backoff import Backoff
from hermes_common.waits import cancel_and_wait, sleep_unless

__all__ = ["McpConnection", "McpToolError", "ServerState"]

log = structlog.get_logger("gateway.mcp")

ServerState = Literal["connecting", "connected", "down", "stopped"]

#: Reconnect delays: 1 s doubling to 60 s, jittered.
RECONNECT_BACKOFF = Backoff(base_s=1.0, cap_s=60.0, jitter=0.25)
KEEPALIVE_S = 30.0
PING_TIMEOUT_S = 5.0
#: A stdio server's stderr log is started afresh past this size (the old one kept as `.1`).
STDERR_LOG_MAX_BYTES = 1_000_000
_PAGE_CAP = 50


class McpToolError(Exception):
    """A tool call that produced no result: the server is down, timed out, or failed. The
    message is for the model (no secrets)."""


@dataclass(frozen=True, slots=True)
class _Lost:
    reason: str


def _describe(exc: BaseException) -> str:
    """A short, secret-free description of why a connection or call failed."""
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}: {str(exc)[:200]}"
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, ConnectionError) and exc.args:
        return str(exc.args[0])[:200]
    if isinstance(exc, FileNotFoundError):
        return "command not found"
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc.strerror or 'OS error'}"
    return type(exc).__name__


def _suspicious(server: str, tools: list[mt.Tool]) -> frozenset[str]:
    """Names of the tools whose description reads like an injection (the threat scan's
    context scope): a server's text reaches the model as tool descriptions. CPU-bound."""
    out = set()
    for tool in tools:
        finding = scan((tool.description or "")[:MAX_DESCRIPTION_CHARS], scope="context")
        if finding is not None:
            log.warning("mcp_tool_description_blocked", server=server, tool=tool.name,
                        pattern_id=finding.pattern_id)
            out.add(tool.name)
    return frozenset(out)


def _closed(exc: BaseException) -> bool:
    return isinstance(exc, MCPError) and exc.code == mt.CONNECTION_CLOSED


class McpConnection:
    """The connection to the server `name` configured by `cfg`.

    `on_tools_changed()` is called (in the owner task) whenever the usable tool list changed:
    after a connect, a refresh, or a loss. `cwd` is a stdio server's default working
    directory and `stderr_log` where its stderr goes (None: discarded). `mode` is the SDK's
    protocol negotiation: "auto" (the 2026 protocol when the server has it, else the
    handshake era) or "legacy" (always the handshake era; tests use it to cover both).
    """

    def __init__(
        self,
        name: str,
        cfg: McpServerConfig,
        *,
        cwd: Path | None = None,
        stderr_log: Path | None = None,
        on_tools_changed: Callable[[], None] | None = None,
        backoff: Backoff = RECONNECT_BACKOFF,
        keepalive_s: float = KEEPALIVE_S,
        mode: str = "auto",
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.name = name
        self.cfg = cfg
        self._cwd = cwd
        self._stderr_log = stderr_log
        self._on_tools_changed = on_tools_changed or (lambda: None)
        self._backoff = backoff
        self._keepalive_s = keepalive_s
        self._mode = mode
        self._max_message_bytes = max_message_bytes
        self._oversize: str | None = None
        self.state: ServerState = "connecting"
        self.last_error: str | None = None
        self.tools: tuple[mt.Tool, ...] = ()
        #: Tools whose description matched the threat scan (it is not shown to the model).
        self.withheld: frozenset[str] = frozenset()
        self.connects = 0
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._settled = asyncio.Event()
        self._wake = asyncio.Event()  # refresh, probe or loss: the serve loop looks
        self._refresh = False
        self._probe = False
        self._lost: _Lost | None = None

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        """Start the owner task (idempotent)."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"mcp:{self.name}")

    async def wait_settled(self, timeout_s: float) -> bool:
        """Until the first connection attempt succeeded or failed (True), or `timeout_s`."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._settled.wait()
        return self._settled.is_set()

    async def stop(self) -> None:
        """Close the connection (a stdio server is stopped: stdin closed, then signals) and
        end the owner task. Idempotent; must not raise."""
        self._stop.set()
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                async with asyncio.timeout(10.0):
                    await asyncio.shield(task)
            except (TimeoutError, Exception):  # noqa: BLE001 - teardown never raises
                if exc := await cancel_and_wait(task):
                    log.warning("mcp_stop_failed", server=self.name,
                                error=type(exc).__name__)
        self.state = "stopped"
        self.tools = ()

    # -- calls ---------------------------------------------------------------------------
    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """Call the server's tool `tool`; its text (at most `MAX_RESULT_CHARS`). Waits at
        most `timeout_s`. Raises `McpToolError` for every failure (a result the server
        flagged as an error included, with its text)."""
        client, generation = self._client, self.connects
        if client is None or self.state != "connected":
            why = f" ({self.last_error})" if self.last_error else ""
            raise McpToolError(f"MCP server '{self.name}' is not connected{why}; it is being "
                               "reconnected, try again later.")
        timeout = self.cfg.timeout_s
        started = time.monotonic()
        try:
            async with asyncio.timeout(timeout):
                result = await client.call_tool(tool, arguments)
        except TimeoutError:
            if generation == self.connects:
                self._ask(probe=True)
            log.warning("mcp_call_timeout", server=self.name, tool=tool, timeout_s=timeout)
            raise McpToolError(f"MCP server '{self.name}' did not answer {tool} within "
                               f"{timeout:g}s; the call was abandoned.") from None
        except Exception as exc:  # noqa: BLE001 - a server's failure is a result, not a crash
            why = _describe(exc)
            if _closed(exc):
                if generation == self.connects:  # not a call left over from a lost one
                    self._ask(lost=f"connection closed during {tool}")
                if self._oversize is not None:
                    raise McpToolError(f"MCP server '{self.name}' {self._oversize} during "
                                       f"{tool}; the connection was reset.") from None
                raise McpToolError(f"MCP server '{self.name}' closed the connection during "
                                   f"{tool} (it may have crashed); it is being reconnected."
                                   ) from None
            log.warning("mcp_call_failed", server=self.name, tool=tool, error=why)
            raise McpToolError(f"MCP server '{self.name}' failed {tool}: {why}") from None
        log.debug("mcp_call_done", server=self.name, tool=tool,
                  ms=round((time.monotonic() - started) * 1000, 1))
        text = result_text(result)
        if result.is_error:
            raise McpToolError(text or f"{tool} failed (the server gave no details)")
        return text

    def _oversized(self, limit: int) -> None:
        self._oversize = f"sent a message over {limit:,} bytes"
        log.warning("mcp_message_too_large", server=self.name, limit_bytes=limit)

    def _ask(self, *, probe: bool = False, refresh: bool = False, lost: str | None = None
             ) -> None:
        self._probe |= probe
        self._refresh |= refresh
        if lost is not None and self._lost is None:
            self._lost = _Lost(lost)
        self._wake.set()

    # -- the owner task ------------------------------------------------------------------
    async def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            if attempt == 0:  # a retry after a failure stays "down" until it connects
                self.state = "connecting"
            try:
                async with AsyncExitStack() as stack:
                    client = await self._connect(stack)
                    attempt = 0
                    await self._serve(client, stack)
            except Exception as exc:  # noqa: BLE001 - any failure: back off and retry
                self.last_error = self._oversize or _describe(exc)
            except asyncio.CancelledError:
                # Ours (stop, shutdown) ends the task; one leaking out of the SDK's task
                # groups when a transport breaks is a failure like any other.
                current = asyncio.current_task()
                if self._stop.is_set() or (current is not None and current.cancelling()):
                    raise
                self.last_error = "the connection was cancelled"
            finally:
                self._client = None
                self._lost = None
                self._oversize = None
            if self._stop.is_set():
                break
            self.state = "down"
            if self.tools:
                self.tools = ()
                self._changed()
            self._settled.set()
            attempt += 1
            delay = self._backoff.delay(attempt)
            log.warning("mcp_server_down", server=self.name, error=self.last_error,
                        retry_in_s=round(delay, 2), attempt=attempt)
            if await sleep_unless(delay, self._stop):
                break
        self.state = "stopped"

    async def _transport(self, stack: AsyncExitStack) -> Any:
        """The SDK transport for the server (not yet entered)."""
        cfg = self.cfg
        if cfg.command is not None:
            if cfg.cwd is None and self._cwd is not None:
                await asyncio.to_thread(self._cwd.mkdir, parents=True, exist_ok=True,
                                        mode=0o700)
            errlog = await asyncio.to_thread(self._open_stderr_log)
            stack.callback(errlog.close)
            env = {k: v.get_secret_value() for k, v in cfg.env.items()}
            params = StdioServerParameters(command=cfg.command, args=list(cfg.args), env=env,
                                           cwd=cfg.cwd or self._cwd)
            return bounded_stdio(params, errlog=errlog, on_oversize=self._oversized,
                                 max_message_bytes=self._max_message_bytes)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        headers = {k: v.get_secret_value() for k, v in cfg.headers.items()}
        http = create_mcp_http_client(headers=headers)
        stack.push_async_callback(http.aclose)
        assert cfg.url is not None  # a validated config has command or url
        return streamable_http_client(cfg.url, http_client=http)

    async def _connect(self, stack: AsyncExitStack) -> Client:
        """Connect and list the tools within `connect_timeout_s`. Raises on failure."""
        async with asyncio.timeout(self.cfg.connect_timeout_s):
            client = Client(await self._transport(stack), message_handler=self._on_message,
                            client_info=mt.Implementation(name="hermes-gateway", version="1"),
                            mode=self._mode)
            await stack.enter_async_context(client)
            await self._list_tools(client)
        caps = client.server_capabilities.tools
        if caps is not None and caps.list_changed and client.protocol_version >= "2026":
            self._listen(client, stack)
        self._client = client
        self.state = "connected"
        self.connects += 1
        self.last_error = None
        self._settled.set()
        log.info("mcp_server_connected", server=self.name, transport=self.cfg.transport,
                 protocol=client.protocol_version, tools=len(self.tools))
        self._changed()
        return client

    def _open_stderr_log(self) -> TextIO:
        path = self._stderr_log
        if path is None:
            return open(os.devnull, "w")  # noqa: SIM115 - closed by the exit stack
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            if path.stat().st_size > STDERR_LOG_MAX_BYTES:
                os.replace(path, path.with_name(path.name + ".1"))
        return open(path, "a", encoding="utf-8", errors="replace")  # noqa: SIM115

    def _listen(self, client: Client, stack: AsyncExitStack) -> None:
        """2026-era servers send list changes only to a `subscriptions/listen` stream."""

        async def listen() -> None:
            try:
                async with client.listen(tools_list_changed=True) as sub:
                    async for _event in sub:
                        self._ask(refresh=True)
            except Exception as exc:  # noqa: BLE001 - a lost stream means a lost server
                if not self._stop.is_set():
                    self._ask(lost=f"change stream lost: {_describe(exc)}")

        task = asyncio.create_task(listen(), name=f"mcp:{self.name}:listen")
        stack.push_async_callback(cancel_and_wait, task)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            self._ask(refresh=True)

    async def _serve(self, client: Client, stack: AsyncExitStack) -> None:
        """Until stopped or the connection is lost: refresh, probe, keep alive."""
        while not self._stop.is_set():
            self._wake.clear()
            if self._lost is not None:
                raise ConnectionError(self._lost.reason)
            if self._refresh:
                self._refresh = False
                await self._list_tools(client, refresh=True)
            if self._probe:
                self._probe = False
                await self._ping(client)
                continue
            woke = await sleep_unless(self._keepalive_s, self._wake)
            if not woke:
                await self._ping(client)

    async def _ping(self, client: Client) -> None:
        """Is the server still there? `ping` on handshake-era connections; 2026-era ones have
        no ping, so the tool list is fetched again (and taken when it changed)."""
        try:
            async with asyncio.timeout(PING_TIMEOUT_S):
                if client.protocol_version < "2026":
                    await client.session.send_ping()
                else:
                    await self._list_tools(client, refresh=True, quiet=True)
        except Exception as exc:
            raise ConnectionError(f"keepalive failed: {_describe(exc)}") from exc

    async def _list_tools(self, client: Client, *, refresh: bool = False,
                          quiet: bool = False) -> None:
        tools: list[mt.Tool] = []
        cursor: str | None = None
        async with asyncio.timeout(self.cfg.connect_timeout_s):
            for _ in range(_PAGE_CAP):
                page = await client.list_tools(cursor=cursor,
                                               cache_mode="refresh" if refresh else "use")
                tools += [t for t in page.tools if self.cfg.allows(t.name)]
                cursor = page.next_cursor
                if cursor is None:
                    break
        before = {t.name for t in self.tools}
        if quiet and tuple(tools) == self.tools:
            return
        self.withheld = await asyncio.to_thread(_suspicious, self.name, tools)
        self.tools = tuple(tools)
        if refresh:
            after = {t.name for t in tools}
            log.info("mcp_tools_refreshed", server=self.name, tools=len(tools),
                     added=sorted(after - before), removed=sorted(before - after))
            self._changed()

    def _changed(self) -> None:
        try:
            self._on_tools_changed()
        except Exception as exc:  # noqa: BLE001 - a listener's bug is not the server's
            log.warning("mcp_listener_failed", server=self.name, error=type(exc).__name__)
