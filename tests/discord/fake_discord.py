"""A fake Discord (REST API v10 + gateway websocket) on 127.0.0.1 for the unmodified discord.py.

    async with FakeDiscord() as fake:
        settings = {"token": fake.token, "api_base_url": fake.api_base_url,
                    "gateway_url": fake.gateway_url}
        ...
        await fake.user_says("hi", channel=DM_ALICE)
        fake.bot_messages(DM_ALICE)

REST answers like Discord: `Content-Type: application/json` exactly, `X-RateLimit-*` headers,
429 with `Via: 1.1 google` and the rate-limit body (discord.py treats a 429 without `Via` as a
Cloudflare ban), JSON error codes (10003, 10008, 50007, 50035). The bot's own messages come
back through the gateway as MESSAGE_CREATE, as they do on Discord.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.discord.fake_gateway import FakeGateway
from tests.discord.fake_payloads import (
    ALICE,
    BOT,
    DM_BLOCKED,
    Snowflakes,
    StoredMessage,
    channel_json,
    component_interaction,
    user_json,
)

__all__ = ["FakeDiscord", "RateLimit"]

API = "/api/v10"
NONCE_WINDOW_S = 300.0  # Discord keeps a nonce "for a few minutes"


@dataclass(slots=True)
class RateLimit:
    retry_after: float
    remaining_hits: int = 1
    is_global: bool = False


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    base = {"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "4",
            "X-RateLimit-Reset": f"{time.time() + 1:.3f}", "X-RateLimit-Reset-After": "1.000",
            "X-RateLimit-Bucket": "fake-bucket"}
    base.update(headers or {})
    return web.Response(status=status, body=json.dumps(data).encode(),
                        content_type="application/json", headers=base)


def _error(status: int, code: int, message: str, **extra: Any) -> web.Response:
    return _json({"message": message, "code": code, **extra}, status)


def _too_long() -> web.Response:
    return _error(400, 50035, "Invalid Form Body", errors={"content": {"_errors": [
        {"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}]}})


class FakeDiscord:
    def __init__(self, *, token: str = "fake-discord-token", heartbeat_interval_ms: int = 5000,
                 host: str = "127.0.0.1") -> None:
        self.token = token
        self.host = host
        self.port = 0
        self.snowflakes = Snowflakes()
        #: (author id, nonce) -> (message id, when): the enforce_nonce deduplication
        self.nonces: dict[tuple[int, str], tuple[int, float]] = {}
        self.messages: dict[int, StoredMessage] = {}
        self.files: dict[int, tuple[str, bytes, str]] = {}
        self.typing: Counter[int] = Counter()
        self.requests: list[tuple[str, str]] = []
        self.rate_limits: list[RateLimit] = []
        self.rate_limited_hits = 0
        #: JSON payloads of message creates and edits, in order: (method, channel, payload)
        self.payloads: list[tuple[str, int, dict[str, Any]]] = []
        #: Interaction responses the bot sent: (interaction id, response type)
        self.interaction_responses: list[tuple[int, int]] = []
        #: (status, body) answered to the next REST calls, one each (a 5xx outage)
        self.outages: list[tuple[int, str]] = []
        self.slow_s = 0.0  # every REST call waits this long before it is answered
        #: attachment file name -> seconds before its download is answered (a stalled CDN)
        self.download_delay_s: dict[str, float] = {}
        #: attachment file names whose download answers 404 (gone from the CDN)
        self.missing_files: set[str] = set()
        self.gateway = FakeGateway(token, "", heartbeat_interval_ms)
        self._runner: web.AppRunner | None = None

    # -- addresses ---------------------------------------------------------------------------
    @property
    def http_base(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def api_base_url(self) -> str:
        return f"{self.http_base}{API}"

    @property
    def gateway_url(self) -> str:
        return f"ws://{self.host}:{self.port}/gateway"

    def settings(self, **extra: Any) -> dict[str, Any]:
        return {"token": self.token, "api_base_url": self.api_base_url,
                "gateway_url": self.gateway_url, **extra}

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> FakeDiscord:
        app = web.Application(middlewares=[self._auth])
        r = app.router
        r.add_get("/gateway", self.gateway.handle)
        r.add_get("/resume", self.gateway.handle)
        r.add_get(f"{API}/users/@me", self._me)
        r.add_get(f"{API}/oauth2/applications/@me", self._application)
        r.add_get(f"{API}/gateway", self._gateway_url)
        r.add_get(f"{API}/gateway/bot", self._gateway_url)
        r.add_get(f"{API}/channels/{{cid}}", self._channel)
        r.add_post(f"{API}/channels/{{cid}}/messages", self._create)
        r.add_get(f"{API}/channels/{{cid}}/messages", self._history)
        r.add_patch(f"{API}/channels/{{cid}}/messages/{{mid}}", self._edit)
        r.add_delete(f"{API}/channels/{{cid}}/messages/{{mid}}", self._delete)
        r.add_post(f"{API}/channels/{{cid}}/typing", self._typing)
        r.add_get("/attachments/{aid}/{name}", self._download)
        r.add_post(f"{API}/interactions/{{iid}}/{{token}}/callback", self._interaction_callback)
        self._runner = web.AppRunner(app, shutdown_timeout=0.2, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.gateway.resume_url = f"ws://{self.host}:{self.port}/resume"
        return self

    async def stop(self) -> None:
        self.gateway.release()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeDiscord:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- driving the fake --------------------------------------------------------------------
    async def user_says(
        self, text: str, *, channel: int, author: int = ALICE, mention_bot: bool = False,
        reply_to: int | None = None, attachment: tuple[str, bytes, str] | None = None,
        attachments: list[tuple[str, bytes, str]] | None = None,
    ) -> StoredMessage:
        """A user posts a message: stored, then dispatched as MESSAGE_CREATE."""
        mentions = [BOT] if mention_bot else []
        if mention_bot:
            text = f"<@{BOT}> {text}"
        if reply_to is not None and reply_to in self.messages:
            mentions.append(self.messages[reply_to].author_id)  # replies ping by default
        msg = StoredMessage(self.snowflakes.next(), channel, author, text, reference=reply_to,
                            mentions=sorted(set(mentions)))
        for item in ([attachment] if attachment is not None else []) + list(attachments or ()):
            msg.attachments.append(self._store_file(*item))
        self.messages[msg.id] = msg
        await self.gateway.dispatch("MESSAGE_CREATE", msg.to_json(self.messages))
        return msg

    def buttons(self, message: StoredMessage) -> list[dict[str, Any]]:
        """The buttons of a bot message (every action row's components)."""
        return [c for row in message.components for c in row.get("components", [])]

    async def press(self, message: StoredMessage, custom_id: str, *, user: int = ALICE,
                    again: dict[str, Any] | None = None) -> dict[str, Any]:
        """`user` presses the button `custom_id` under `message`: INTERACTION_CREATE
        (`again`: the same interaction dispatched once more). Returns its payload."""
        assert any(b.get("custom_id") == custom_id for b in self.buttons(message))
        data = again or component_interaction(iid=self.snowflakes.next(), message=message,
                                              custom_id=custom_id, user=user,
                                              lookup=self.messages)
        await self.gateway.dispatch("INTERACTION_CREATE", data)
        return data

    async def _interaction_callback(self, request: web.Request) -> web.Response:
        body = await request.json()
        iid = int(request.match_info["iid"])
        if request.match_info["token"] != f"itoken-{iid}":
            return _error(401, 50027, "Invalid Webhook Token")
        self.interaction_responses.append((iid, int(body["type"])))
        return _json({"interaction": {"id": str(iid), "type": 3}})

    async def user_edits(self, message: StoredMessage, text: str) -> None:
        """The user edits their message: stored, then dispatched as MESSAGE_UPDATE."""
        message.content = text
        message.edits += 1
        message.edited = time.time()
        await self.gateway.dispatch("MESSAGE_UPDATE", message.to_json(self.messages))

    async def redeliver(self, message: StoredMessage) -> None:
        """Dispatch the same MESSAGE_CREATE again (as after a replay)."""
        await self.gateway.dispatch("MESSAGE_CREATE", message.to_json(self.messages))

    def rate_limit_next(self, retry_after: float, *, hits: int = 1,
                        is_global: bool = False) -> None:
        """The next `hits` message creates / edits answer 429 with `retry_after`."""
        self.rate_limits.append(RateLimit(retry_after, hits, is_global))

    async def drop_connection(self, *, hold: bool = False) -> None:
        await self.gateway.drop(hold=hold)

    def release(self) -> None:
        self.gateway.release()

    def bot_messages(self, channel: int) -> list[StoredMessage]:
        return [m for m in self.messages.values()
                if m.channel_id == channel and m.author_id == BOT and not m.deleted]

    # -- REST --------------------------------------------------------------------------------
    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path.startswith(API):
            self.requests.append((request.method, request.path))
            # interaction callbacks are authorized by their token in the path, as on Discord
            if (not request.path.startswith(f"{API}/interactions/")
                    and request.headers.get("Authorization") != f"Bot {self.token}"):
                return _error(401, 0, "401: Unauthorized")
            if self.slow_s:
                await asyncio.sleep(self.slow_s)
            if self.outages:
                status, body = self.outages.pop(0)
                return web.Response(status=status, text=body, content_type="text/plain")
        return await handler(request)

    def _rate_limited(self) -> web.Response | None:
        if not self.rate_limits:
            return None
        rl = self.rate_limits[0]
        rl.remaining_hits -= 1
        if rl.remaining_hits <= 0:
            self.rate_limits.pop(0)
        self.rate_limited_hits += 1
        headers = {"Via": "1.1 google", "Retry-After": str(math.ceil(rl.retry_after)),
                   "X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": f"{rl.retry_after}",
                   "X-RateLimit-Reset": f"{time.time() + rl.retry_after:.3f}",
                   "X-RateLimit-Scope": "global" if rl.is_global else "user"}
        if rl.is_global:
            headers["X-RateLimit-Global"] = "true"
        body = {"message": "You are being rate limited.", "retry_after": rl.retry_after,
                "global": rl.is_global}
        return _json(body, 429, headers)

    async def _me(self, request: web.Request) -> web.Response:
        return _json(user_json(BOT))

    async def _application(self, request: web.Request) -> web.Response:
        return _json({"id": str(BOT), "name": "hermes", "description": "", "icon": None,
                      "bot_public": False, "bot_require_code_grant": False,
                      "owner": user_json(ALICE), "team": None, "verify_key": "00" * 32,
                      "flags": 1 << 19, "summary": ""})

    async def _gateway_url(self, request: web.Request) -> web.Response:
        return _json({"url": self.gateway_url, "shards": self.gateway.recommended_shards,
                      "session_start_limit": {
            "total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}})

    async def _channel(self, request: web.Request) -> web.Response:
        data = channel_json(int(request.match_info["cid"]))
        return _json(data) if data else _error(404, 10003, "Unknown Channel")

    def _store_file(self, name: str, data: bytes, mime: str) -> dict[str, Any]:
        aid = self.snowflakes.next()
        self.files[aid] = (name, data, mime)
        url = f"{self.http_base}/attachments/{aid}/{name}"
        return {"id": str(aid), "filename": name, "size": len(data), "url": url,
                "proxy_url": url, "content_type": mime}

    async def _read_body(self, request: web.Request) -> tuple[dict[str, Any], list[dict]]:
        if not request.content_type.startswith("multipart/"):
            return await request.json(), []
        payload: dict[str, Any] = {}
        files: list[dict[str, Any]] = []
        reader = await request.multipart()
        async for part in reader:
            if part.name == "payload_json":
                payload = json.loads(await part.text())
            elif part.filename:
                data = bytes(await part.read())
                mime = part.headers.get("Content-Type", "application/octet-stream")
                files.append(self._store_file(part.filename, data, mime))
        return payload, files

    async def _create(self, request: web.Request) -> web.Response:
        limited = self._rate_limited()
        if limited is not None:
            return limited
        cid = int(request.match_info["cid"])
        if channel_json(cid) is None:
            return _error(404, 10003, "Unknown Channel")
        if cid == DM_BLOCKED:
            return _error(403, 50007, "Cannot send messages to this user")
        payload, files = await self._read_body(request)
        self.payloads.append(("POST", cid, payload))
        content = payload.get("content") or ""
        if len(content) > 2000:
            return _too_long()
        if not content and not files:
            return _error(400, 50006, "Cannot send an empty message")
        nonce = str(payload.get("nonce") or "")
        if nonce and payload.get("enforce_nonce"):
            # Discord: the same nonce from the same author within a few minutes returns the
            # message created the first time instead of creating another one
            earlier = self.nonces.get((BOT, nonce))
            if earlier is not None and time.monotonic() - earlier[1] < NONCE_WINDOW_S:
                return _json(self.messages[earlier[0]].to_json(self.messages))
        ref = payload.get("message_reference") or {}
        reference = int(ref["message_id"]) if ref.get("message_id") else None
        if reference is not None and reference not in self.messages:
            if ref.get("fail_if_not_exists", True):
                return _error(400, 50035, "Invalid Form Body")
            reference = None
        msg = StoredMessage(self.snowflakes.next(), cid, BOT, content, reference=reference,
                            attachments=files, components=list(payload.get("components") or []))
        self.messages[msg.id] = msg
        if nonce and payload.get("enforce_nonce"):
            self.nonces[(BOT, nonce)] = (msg.id, time.monotonic())
        data = msg.to_json(self.messages)
        await self.gateway.dispatch("MESSAGE_CREATE", data)
        return _json(data)

    async def _history(self, request: web.Request) -> web.Response:
        """GET messages: `after` gives the oldest `limit` newer ones; newest first, as Discord."""
        cid = int(request.match_info["cid"])
        if channel_json(cid) is None:
            return _error(404, 10003, "Unknown Channel")
        limit = min(int(request.query.get("limit", 50)), 100)
        found = sorted((m for m in self.messages.values()
                        if m.channel_id == cid and not m.deleted), key=lambda m: m.id)
        if "after" in request.query:
            after = int(request.query["after"])
            found = [m for m in found if m.id > after][:limit]
        else:
            if "before" in request.query:
                found = [m for m in found if m.id < int(request.query["before"])]
            found = found[-limit:]
        return _json([m.to_json(self.messages) for m in reversed(found)])

    async def _edit(self, request: web.Request) -> web.Response:
        limited = self._rate_limited()
        if limited is not None:
            return limited
        cid, mid = int(request.match_info["cid"]), int(request.match_info["mid"])
        msg = self.messages.get(mid)
        if msg is None or msg.channel_id != cid or msg.deleted:
            return _error(404, 10008, "Unknown Message")
        if msg.author_id != BOT:
            return _error(403, 50005, "Cannot edit a message authored by another user")
        payload = await request.json()
        self.payloads.append(("PATCH", cid, payload))
        content = payload.get("content")
        if content is not None:
            if len(content) > 2000:
                return _too_long()
            msg.content = content
        msg.edits += 1
        msg.edited = time.time()
        data = msg.to_json(self.messages)
        await self.gateway.dispatch("MESSAGE_UPDATE", data)
        return _json(data)

    async def _delete(self, request: web.Request) -> web.Response:
        cid, mid = int(request.match_info["cid"]), int(request.match_info["mid"])
        msg = self.messages.get(mid)
        if msg is None or msg.channel_id != cid or msg.deleted:
            return _error(404, 10008, "Unknown Message")
        msg.deleted = True
        await self.gateway.dispatch("MESSAGE_DELETE", {"id": str(mid), "channel_id": str(cid)})
        return web.Response(status=204)

    async def _typing(self, request: web.Request) -> web.Response:
        cid = int(request.match_info["cid"])
        if channel_json(cid) is None:
            return _error(404, 10003, "Unknown Channel")
        self.typing[cid] += 1
        return web.Response(status=204)

    async def _download(self, request: web.Request) -> web.Response:
        item = self.files.get(int(request.match_info["aid"]))
        if item is None:
            return web.Response(status=404)
        name, data, mime = item
        if name in self.missing_files:
            return web.Response(status=404)
        await asyncio.sleep(self.download_delay_s.get(name, 0.0))
        return web.Response(body=data, content_type=mime)
