"""The gateway-websocket half of the fake Discord: HELLO, IDENTIFY, READY, heartbeats,
RESUME with replay of missed dispatches, INVALID_SESSION, and dispatches with sequence numbers.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.discord.fake_payloads import BOT, GUILD, guild_json, user_json

__all__ = ["FakeGateway", "GatewaySession"]

MESSAGE_CONTENT_INTENT = 1 << 15


@dataclass(slots=True)
class GatewaySession:
    session_id: str
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
        self.session: GatewaySession | None = None
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

    # -- dispatch ----------------------------------------------------------------------------
    async def dispatch(self, name: str, data: dict[str, Any]) -> int | None:
        """Send a dispatch in the current session (kept for replay). Returns its sequence."""
        async with self._lock:
            session = self.session
            if session is None:
                return None
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
        """Close the live socket with 4000 (resumable); with `hold` new connections wait for
        `release()` before HELLO, so dispatches made meanwhile are only seen through RESUME."""
        if hold:
            self.open.clear()
        self.attached.clear()
        async with self._lock:
            ws = self.session.ws if self.session else None
            if self.session:
                self.session.ws = None
        if ws is not None and not ws.closed:
            await ws.close(code=4000, message=b"fake drop")

    async def invalidate(self) -> None:
        """Forget the session and drop the socket: the client's RESUME gets INVALID_SESSION."""
        async with self._lock:
            session, self.session = self.session, None
        self.attached.clear()
        if session is not None and session.ws is not None and not session.ws.closed:
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
            if self.session is not None and self.session.ws is ws:
                self.session.ws = None
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
        async with self._lock:
            self.session = GatewaySession(session_id=uuid.uuid4().hex, ws=ws)
        ready = {"v": 10, "user": user_json(BOT), "guilds": [{"id": str(GUILD),
                                                              "unavailable": True}],
                 "session_id": self.session.session_id, "resume_gateway_url": self.resume_url,
                 "application": {"id": str(BOT), "flags": 0}, "private_channels": [],
                 "relationships": []}
        await self.dispatch("READY", ready)
        await self.dispatch("GUILD_CREATE", guild_json())
        self.attached.set()

    async def _resume(self, ws: web.WebSocketResponse, data: dict[str, Any]) -> None:
        self.resumes.append(data)
        async with self._lock:
            session = self.session
            if (
                session is None
                or data.get("token") != self.token
                or data.get("session_id") != session.session_id
            ):
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
