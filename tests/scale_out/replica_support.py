"""Several real `hermes gateway run` replicas on one PostgreSQL database, for the multi-replica
tests and the chaos suite's replica mode: a profile per replica (same config, same bot), a
round-robin load balancer for webhooks on 127.0.0.1, and readers of the replica tables.

Each replica is its own process group; `kill9()` is `kill -9` of one of them. Which replica
owns a session or leads an intake is read from the database (`session_leases`,
`leader_leases`, `replicas.pid`), as an operator would."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web

from tests.fakes.gateway_process import HERMES
from tests.fakes.openai_server import RecordedRequest, Reply, Script

__all__ = ["LoadBalancer", "Replica", "ReplicaSet", "answering", "echoed", "free_port",
           "wait_live"]

LEASE = {"lease_s": 3.0, "heartbeat_s": 0.75, "sweep_s": 0.3, "stale_handover_s": 1.0}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answering(delay_s: float = 0.0) -> Callable[[RecordedRequest], Script]:
    """The model's answer to every user message since the last reply (a queued batch is one
    turn): "echo: <text> | <text>"."""

    def respond(req: RecordedRequest) -> Script:
        msgs = req.body.get("messages") or []
        texts: list[str] = []
        for m in msgs:
            if m.get("role") == "assistant":
                texts = []
            elif m.get("role") == "user":
                content = m.get("content")
                texts.append(content if isinstance(content, str) else str(content))
        return Reply(text="echo: " + " | ".join(texts), delay_s=delay_s)

    return respond


def echoed(bot_texts: Iterable[str]) -> list[str]:
    """The user messages `answering` answered in these bot messages, in the order shown."""
    out: list[str] = []
    for text in bot_texts:
        if text.startswith("echo: ") and not text.endswith("▌"):  # finals, not previews
            # a merged batch is one user message, one per line
            out += [t for part in text[len("echo: "):].split(" | ")
                    for t in part.split("\n") if t]
    return out


async def wait_live(rs: ReplicaSet, n: int, timeout: float = 60) -> None:
    """Until `n` replicas of `rs` are live in the database."""
    async def poll() -> None:
        while len(await rs.live_pids()) < n:
            await asyncio.sleep(0.2)

    try:
        await asyncio.wait_for(poll(), timeout)
    except TimeoutError:
        raise AssertionError("replicas not live in time\n" + rs.logs()) from None


class LoadBalancer:
    """Round-robin HTTP proxy to the replicas' webhook servers; a replica that refuses the
    connection (dead) is skipped, as a load balancer's health check would."""

    def __init__(self, backends: list[str]) -> None:
        self.backends = backends
        self.port = free_port()
        self._next = 0
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        self.forwarded: list[tuple[str, int]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._proxy)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        self._http = aiohttp.ClientSession()

    async def stop(self) -> None:
        if self._http is not None:
            await self._http.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _proxy(self, request: web.Request) -> web.Response:
        assert self._http is not None
        body = await request.read()
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() not in ("host", "content-length")}
        for _ in range(len(self.backends)):
            backend = self.backends[self._next % len(self.backends)]
            self._next += 1
            try:
                async with self._http.request(request.method, backend + request.path_qs,
                                              data=body, headers=headers,
                                              timeout=aiohttp.ClientTimeout(total=30)) as r:
                    self.forwarded.append((backend, r.status))
                    return web.Response(status=r.status, body=await r.read())
            except (aiohttp.ClientConnectionError, TimeoutError):
                continue
        return web.Response(status=502)


@dataclass
class Replica:
    name: str
    home: Path
    webhook_port: int | None = None
    proc: asyncio.subprocess.Process | None = None
    exits: list[int] = field(default_factory=list)

    @property
    def log(self) -> Path:
        return self.home / "gateway.log"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.running and self.proc is not None else None


class ReplicaSet:
    """`n` replica profiles under `root` sharing `dsn`; `platforms(replica)` builds each
    one's `platforms:` block (its own webhook port)."""

    def __init__(self, root: Path, dsn: str, n: int, *, model_url: str,
                 platforms: Any, extra: dict[str, Any] | None = None) -> None:
        self.dsn = dsn
        self.replicas = [Replica(f"r{i}", root / f"r{i}") for i in range(n)]
        self._platforms = platforms
        self._model_url = model_url
        self._extra = extra or {}

    def config(self, r: Replica) -> dict[str, Any]:
        cfg: dict[str, Any] = {
            "providers": {"main": {"base_url": self._model_url, "api_keys": ["sk-replica-key"],
                                   "model": "fake-model", "context_length": 32000,
                                   "timeout_s": 20, "max_retries": 1}},
            "storage": {"backend": "postgres", "dsn": self.dsn},
            "compression": {"enabled": False},
            "gateway": {"busy_mode": "queue", "drain_timeout_s": 3, "burst_merge_s": 0,
                        "streaming": {"edit_interval_s": 0.2}, "health": {"port": 0},
                        "adapter_connect_timeout_s": 20, "replicas": dict(LEASE)},
            "logging": {"file": {"enabled": False}},
            "platforms": self._platforms(r),
        }
        for k, v in self._extra.items():
            cfg[k] = v
        return cfg

    async def start(self, r: Replica) -> None:
        r.home.mkdir(parents=True, exist_ok=True)
        (r.home / "config.yaml").write_text(yaml.safe_dump(self.config(r)))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("HERMES_", "TELEGRAM_", "SLACK_", "DISCORD_"))}
        env.update({"HERMES_HOME": str(r.home), "HERMES_LOCK_DIR": str(r.home / "locks")})
        with r.log.open("ab") as out:
            r.proc = await asyncio.create_subprocess_exec(
                str(HERMES), "gateway", "run", env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    async def start_all(self) -> None:
        for r in self.replicas:
            await self.start(r)

    def kill9(self, r: Replica) -> None:
        assert r.proc is not None and r.proc.returncode is None
        os.killpg(r.proc.pid, signal.SIGKILL)

    async def wait(self, r: Replica, timeout: float = 30) -> int | None:
        if r.proc is None:
            return None
        try:
            code = await asyncio.wait_for(r.proc.wait(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(r.proc.pid, signal.SIGKILL)
            code = await r.proc.wait()
        r.exits.append(code)
        return code

    async def stop_all(self) -> None:
        for r in self.replicas:
            if r.running and r.proc is not None:
                r.proc.send_signal(signal.SIGTERM)
        for r in self.replicas:
            if r.proc is not None and r.proc.returncode is None:
                await self.wait(r, 20)

    def by_pid(self, pid: int) -> Replica | None:
        return next((r for r in self.replicas if r.pid == pid), None)

    # -- the database's view ------------------------------------------------------------------
    async def query(self, sql: str, *args: Any) -> list[Any]:
        import asyncpg

        conn = await asyncpg.connect(self.dsn)
        try:
            return list(await conn.fetch(sql, *args))
        finally:
            await conn.close()

    async def live_pids(self) -> set[int]:
        import asyncpg

        try:
            rows = await self.query("SELECT pid FROM replicas WHERE stopped_at IS NULL AND"
                                    " expires_at > extract(epoch from now())")
        except asyncpg.UndefinedTableError:  # not migrated yet: no replica is up
            return set()
        return {int(r["pid"]) for r in rows}

    async def owner_of(self, key_like: str) -> Replica | None:
        rows = await self.query(
            "SELECT r.pid FROM session_leases l JOIN replicas r ON r.id = l.holder"
            " WHERE l.session_key LIKE $1 AND l.expires_at > extract(epoch from now())",
            key_like)
        return self.by_pid(int(rows[0]["pid"])) if rows else None

    async def leader_of(self, role_like: str) -> Replica | None:
        rows = await self.query(
            "SELECT r.pid FROM leader_leases l JOIN replicas r ON r.id = l.holder"
            " WHERE l.role LIKE $1 AND l.expires_at > extract(epoch from now())", role_like)
        return self.by_pid(int(rows[0]["pid"])) if rows else None

    def logs(self) -> str:
        out = []
        for r in self.replicas:
            if r.log.exists():
                out.append(f"--- {r.name} ---\n" + r.log.read_text(errors="replace")[-2500:])
        return "\n".join(out)
