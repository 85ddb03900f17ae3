"""The gateway-websocket half of the fake Discord: HELLO, IDENTIFY, READY, heartbeats,
RESUME with replay of missed dispatches, INVALID_SESSION, and dispatches with sequence numbers.

Sharding as on Discord: IDENTIFY's `shard: [id, count]` (absent: `[0, 1]`) makes a session
of that shard; a guild's events go only to the sessions of shard `(guild_id >> 22) % count`,
DMs (no guild) to shard 0, and READY lists that shard's guilds. Several sessions of one
shard all receive (Discord does not end the older one). An invalid shard closes with 4010.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.discord.fake_payloads import BOT, GUILDS, guild_json, user_json

__all__ = ["FakeGateway", "GatewaySession"]

MESSAGE_CONTENT_INTENT = 1 << 15


def shard_of(guild_id: int | None, count: int) -> int:
    return 0 if guild_id is None else (guild_id >> 22) % count


@dataclass(slots=True)
class GatewaySession:
    session_id: str
    shard: tuple[int, int] = (0, 1)
    seq: int = 0
    #: every dispatch sent in this session, by sequence number (for RESUME replay)
    events: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    ws: web.WebSocketResponse | None = None


class FakeGateway:
    """One bot's gateway. Dispatches made while no socket is attached are kept and replayed
    when the client RESUMEs."""

    def __init__(self, token: str, resume_url: str, heartbeat_interval_ms: int) -> None:
        self.token = token
        self.resume_url = resume_url
        self.heartbeat_interval_ms = heartbeat_interval_ms
        #: every session not invalidated, oldest first
        self.sessions: list[GatewaySession] = []
        #: what `GET /gateway/bot` recommends
        self.recommended_shards = 1
        self.identifies: list[dict[str, Any]] = []
        self.resumes: list[dict[str, Any]] = []
        self.heartbeats = 0
        self.connections = 0
        #: URL path of every websocket connection (`/gateway` first, `/resume` on RESUME)
        self.paths: list[str] = []
        self.open = asyncio.Event()
        self.open.set()
        self._lock = asyncio.Lock()
        self.attached = asyncio.Event()
        #: False = the bot's MESSAGE_CONTENT intent is off in the developer portal
        self.message_content_enabled = True

    @property
    def session(self) -> GatewaySession | None:
        """The newest session (the only one of an unsharded bot)."""
        return self.sessions[-1] if self.sessions else None

    def identified_shards(self) -> list[tuple[int, int]]:
        """(shard id, count) of every IDENTIFY with the right token, in order."""
        return [tuple(d.get("shard") or (0, 1)) for d in self.identifies  # type: ignore[misc]
                if d.get("token") == self.token]

    def live_shards(self) -> set[tuple[int, int]]:
        """The shards with a session whose socket is open now."""
        return {s.shard for s in self.sessions if s.ws is not None and not s.ws.closed}

    # -- dispatch ----------------------------------------------------------------------------
    async def dispatch(self, name: str, data: dict[str, Any]) -> int | None:
        """Send a dispatch to the sessions of its guild's shard (kept for replay). Returns its
        sequence in the newest of them (None: no session of that shard)."""
        guild = data.get("guild_id")
        async with self._lock:
            targets = [s for s in self.sessions
                       if shard_of(int(guild) if guild else None, s.shard[1]) == s.shard[0]]
            seq = None
            for session in targets:
                seq = await self._dispatch_to(session, name, data)
            return seq

    async def _dispatch_to(self, session: GatewaySession, name: str,
                           data: dict[str, Any]) -> int:
        session.seq += 1
        frame = {"op": 0, "t": name, "s": session.seq, "d": data}
        session.events.append((session.seq, frame))
        await self._send(session, frame)
        return session.seq

    async def _send(self, session: GatewaySession, frame: dict[str, Any]) -> None:
        ws = session.ws
        if ws is None or ws.closed:
            return
        try:
            await ws.send_str(json.dumps(frame))
        except (ConnectionError, RuntimeError):
            session.ws = None

    async def drop(self, *, hold: bool) -> None:
        """Close the live sockets with 4000 (resumable); with `hold` new connections wait for
        `release()` before HELLO, so dispatches made meanwhile are only seen through RESUME."""
        if hold:
            self.open.clear()
        self.attached.clear()
        async with self._lock:
            sockets = [s.ws for s in self.sessions if s.ws is not None]
            for session in self.sessions:
                session.ws = None
        for ws in sockets:
            if not ws.closed:
                await ws.close(code=4000, message=b"fake drop")

    async def invalidate(self) -> None:
        """Forget the sessions and drop the sockets: a client's RESUME gets INVALID_SESSION."""
        async with self._lock:
            sessions, self.sessions = self.sessions, []
        self.attached.clear()
        for session in sessions:
            if session.ws is not None and not session.ws.closed:
                await session.ws.close(code=4000, message=b"fake invalidate")

    def release(self) -> None:
        self.open.set()

    # -- websocket ---------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.connections += 1
        self.paths.append(request.path)
        await self.open.wait()
        hello = {"op": 10, "s": None, "t": None,
                 "d": {"heartbeat_interval": self.heartbeat_interval_ms}}
        await ws.send_str(json.dumps(hello))
        async for msg in ws:
            if msg.type is not WSMsgType.TEXT:
                continue
            frame = json.loads(msg.data)
            op, data = frame.get("op"), frame.get("d")
            if op == 1:
                self.heartbeats += 1
                await ws.send_str(json.dumps({"op": 11, "s": None, "t": None, "d": None}))
            elif op == 2:
                await self._identify(ws, data)
            elif op == 6:
                await self._resume(ws, data)
        async with self._lock:
            for session in self.sessions:
                if session.ws is ws:
                    session.ws = None
        return ws

    async def _identify(self, ws: web.WebSocketResponse, data: dict[str, Any]) -> None:
        self.identifies.append(data)
        if data.get("token") != self.token:
            await ws.close(code=4004, message=b"Authentication failed.")
            return
        asked = int(data.get("intents", 0)) & MESSAGE_CONTENT_INTENT
        if asked and not self.message_content_enabled:
            await ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        if not asked:
            # the fake's bot has the privileged intent enabled; a client not asking for it is
            # a bug in the adapter, made loud here
            await ws.close(code=4013, message=b"Invalid intent(s).")
            return
        shard_id, count = (int(n) for n in (data.get("shard") or (0, 1)))
        if count < 1 or not 0 <= shard_id < count:
            await ws.close(code=4010, message=b"Invalid shard.")
            return
        guilds = [g for g in GUILDS if shard_of(g, count) == shard_id]
        async with self._lock:
            session = GatewaySession(session_id=uuid.uuid4().hex, shard=(shard_id, count),
                                     ws=ws)
            self.sessions.append(session)
            ready = {"v": 10, "user": user_json(BOT),
                     "guilds": [{"id": str(g), "unavailable": True} for g in guilds],
                     "session_id": session.session_id, "resume_gateway_url": self.resume_url,
                     "application": {"id": str(BOT), "flags": 0}, "private_channels": [],
                     "relationships": [], "shard": [shard_id, count]}
            await self._dispatch_to(session, "READY", ready)
            for g in guilds:
                await self._dispatch_to(session, "GUILD_CREATE", guild_json(g))
        self.attached.set()

    async def _resume(self, ws: web.WebSocketResponse, data: dict[str, Any]) -> None:
        self.resumes.append(data)
        async with self._lock:
            session = next((s for s in self.sessions
                            if s.session_id == data.get("session_id")), None)
            if session is None or data.get("token") != self.token:
                await ws.send_str(json.dumps({"op": 9, "s": None, "t": None, "d": False}))
                await ws.close(code=4009, message=b"Session timed out.")
                return
            session.ws = ws
            last = int(data.get("seq") or 0)
            for seq, frame in session.events:
                if seq > last:
                    await self._send(session, frame)
            await self._send(session, {"op": 0, "t": "RESUMED", "s": None, "d": {}})
        self.attached.set()
