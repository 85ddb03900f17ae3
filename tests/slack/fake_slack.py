"""A fake Slack on 127.0.0.1 driven by the unmodified slack-sdk / slack-bolt.

- Web API under `/api/<method>` (auth.test, apps.connections.open, chat.postMessage/update/
  delete, conversations.info, users.info, the v2 upload flow; files.upload answers
  `method_deprecated`), token checks (`invalid_auth`), scripted 429s with `Retry-After` and
  scripted error codes.
- A Socket Mode websocket: `hello`, then `events_api` envelopes that must be acked by
  `envelope_id`; un-acked envelopes are sent again on the next connection (like Slack's
  retries); `disconnect` (refresh_requested) and abrupt drops.
- The signed HTTP Events API (`post_event`, `url_verification`, redeliveries with
  X-Slack-Retry-Num).
- A transcript of everything the bot posted, per channel, with thread_ts and edit history.
  Bot posts and edits are echoed back as events (bot message / message_changed) like Slack.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from tests.slack.payloads import (
    block_actions,
    envelope,
    event_callback,
    message_event,
    signed_headers,
)

__all__ = ["Channel", "FakeSlack", "Posted"]


@dataclass
class Posted:
    """A message the bot posted (final visible state plus history)."""

    ts: str
    channel: str
    text: str
    thread_ts: str | None = None
    mrkdwn: bool | None = None
    history: list[str] = field(default_factory=list)
    deleted: bool = False
    files: list[str] = field(default_factory=list)
    blocks: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] | None = None  # chat.postMessage `metadata`, as Slack keeps it


@dataclass
class Channel:
    id: str
    kind: str  # im | channel | group | mpim
    name: str = ""
    archived: bool = False
    member: bool = True


class FakeSlack:
    def __init__(
        self,
        *,
        bot_token: str = "xoxb-test-bot-token",
        app_token: str = "xapp-test-app-token",
        signing_secret: str = "test-signing-secret",
        bot_user_id: str = "UBOT",
        bot_id: str = "BBOT",
        team_id: str = "T0001",
        echo_bot_messages: bool = True,
        retry_unacked_s: float | None = None,
    ) -> None:
        self.bot_token, self.app_token, self.signing_secret = bot_token, app_token, signing_secret
        self.bot_user_id, self.bot_id, self.team_id = bot_user_id, bot_id, team_id
        self.app_id = "A0001"
        self.echo_bot_messages = echo_bot_messages
        self.mode = "socket"
        self.events_url: str | None = None
        self.channels: dict[str, Channel] = {}
        self.users: dict[str, dict[str, Any]] = {}
        self.posted: dict[str, list[Posted]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.uploads: dict[str, dict[str, Any]] = {}
        self.files: dict[str, dict[str, Any]] = {}
        self.pending: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.acked: list[str] = []
        #: envelope id -> the numbers (one counter for all) of each time it was sent on a socket
        self.deliveries: dict[str, list[int]] = {}
        #: envelope id -> the number of the delivery that was acked (the last one before the ack)
        self.acked_delivery: dict[str, int] = {}
        self._delivery_no = itertools.count(1)
        self.connections_opened = 0
        self.sockets: list[web.WebSocketResponse] = []
        self.last_delivered: dict[str, Any] | None = None
        self.download_delay_s: dict[str, float] = {}  # file id -> seconds before it is served
        self.outages: list[tuple[int, str]] = []  # (status, plain-text body) for the next calls
        self.stall_next_s = 0.0  # the next API call hangs this long before it is answered
        self.slow_s = 0.0  # every API call waits this long before it is answered
        #: like Slack, send an envelope not acked within this many seconds again (None: only
        #: on the next connection)
        self.retry_unacked_s = retry_unacked_s
        self._sent_at: dict[str, float] = {}
        self._rate_limits: list[tuple[frozenset[str], float]] = []
        self._errors: dict[str, list[str]] = {}
        self._seq = itertools.count(1)
        self._base_ts = int(time.time())
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.port = 0
        self.add_channel("D0001", "im")
        self.add_channel("C0001", "channel", "general")
        self.add_user("U0001", "alice")

    # -- setup --------------------------------------------------------------------------------

    def add_channel(self, cid: str, kind: str, name: str = "", **kw: Any) -> Channel:
        self.channels[cid] = Channel(cid, kind, name or cid.lower(), **kw)
        return self.channels[cid]

    def add_user(self, uid: str, name: str, *, is_bot: bool = False) -> None:
        self.users[uid] = {"id": uid, "name": name, "real_name": name.title(),
                           "is_bot": is_bot, "profile": {"display_name": name}}

    def add_file(self, name: str, data: bytes, mimetype: str = "text/plain") -> dict[str, Any]:
        """A file a user shares; returns the `files[]` entry for a message event."""
        fid = f"F{next(self._seq):06d}"
        self.files[fid] = {"name": name, "data": data, "mimetype": mimetype}
        url = f"{self.base_url}/files-pri/{self.team_id}-{fid}/{name}"
        return {"id": fid, "name": name, "title": name, "mimetype": mimetype,
                "size": len(data), "url_private": url, "url_private_download": url + "?dl=1",
                "mode": "hosted"}

    def rate_limit_next(self, retry_after: float, methods: tuple[str, ...] = (
            "chat.postMessage",)) -> None:
        self._rate_limits.append((frozenset(methods), retry_after))

    def clear_rate_limits(self) -> None:
        self._rate_limits.clear()

    def fail_next(self, method: str, error: str) -> None:
        self._errors.setdefault(method, []).append(error)

    def next_ts(self) -> str:
        return f"{self._base_ts}.{next(self._seq):06d}"

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/"

    async def start(self) -> FakeSlack:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/socket/{conn}", self._socket)
        app.router.add_post("/upload/{fid}", self._upload)
        app.router.add_get("/files-pri/{key}/{name}", self._download)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        self._http = aiohttp.ClientSession()
        if self.retry_unacked_s is not None:
            self._spawn(self._retry_unacked(self.retry_unacked_s))
        return self

    async def stop(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        for ws in list(self.sockets):
            with contextlib.suppress(Exception):
                await ws.close()
        if self._http is not None:
            await self._http.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> FakeSlack:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- observation --------------------------------------------------------------------------

    def bot_messages(self, channel: str) -> list[Posted]:
        return [m for m in self.posted.get(channel, []) if not m.deleted]

    def calls_to(self, method: str) -> list[dict[str, Any]]:
        return [p for m, p in self.calls if m == method]

    async def wait_for(self, predicate: Any, timeout_s: float = 5.0) -> None:
        async def _wait() -> None:
            async with self._changed:
                await self._changed.wait_for(predicate)
        await asyncio.wait_for(_wait(), timeout_s)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # -- Web API ------------------------------------------------------------------------------

    async def _params(self, request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query)
        if request.can_read_body:
            if request.content_type == "application/json":
                params.update(await request.json())
            else:
                form = await request.post()
                params.update({k: v for k, v in form.items() if isinstance(v, str)})
        return params

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await self._params(request)
        self.calls.append((method, params))
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip() if auth else str(params.get("token", ""))
        expected = self.app_token if method == "apps.connections.open" else self.bot_token
        if not token:
            return _ok_false("not_authed")
        if token != expected:
            return _ok_false("invalid_auth")
        if self.outages:
            status, text = self.outages.pop(0)
            return web.Response(status=status, text=text, content_type="text/plain")
        if self.stall_next_s:
            stall, self.stall_next_s = self.stall_next_s, 0.0
            await asyncio.sleep(stall)
        if self.slow_s:
            await asyncio.sleep(self.slow_s)
        for i, (methods, retry_after) in enumerate(self._rate_limits):
            if method in methods:
                del self._rate_limits[i]
                return web.json_response({"ok": False, "error": "ratelimited"}, status=429,
                                         headers={"Retry-After": f"{retry_after:g}"})
        if self._errors.get(method):
            return _ok_false(self._errors[method].pop(0))
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return _ok_false("unknown_method")
        result = await handler(params)
        await self._notify()
        return web.json_response(result)

    async def _m_auth_test(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": "https://fake.slack.com/", "team": "Fake", "user": "hermes",
                "team_id": self.team_id, "user_id": self.bot_user_id, "bot_id": self.bot_id,
                "is_enterprise_install": False}

    async def _m_apps_connections_open(self, p: dict[str, Any]) -> dict[str, Any]:
        self.connections_opened += 1
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket/{self.connections_opened}"}

    def _channel_error(self, cid: str) -> str | None:
        ch = self.channels.get(cid)
        if ch is None:
            return "channel_not_found"
        if ch.archived:
            return "is_archived"
        if not ch.member:
            return "not_in_channel"
        return None

    async def _m_chat_postMessage(self, p: dict[str, Any]) -> dict[str, Any]:
        cid, text = str(p.get("channel", "")), str(p.get("text") or "")
        if err := self._channel_error(cid):
            return {"ok": False, "error": err}
        if not text:
            return {"ok": False, "error": "no_text"}
        if len(text) > 40000:
            return {"ok": False, "error": "msg_too_long"}
        mrkdwn = p.get("mrkdwn")
        blocks = p.get("blocks") or []
        if isinstance(blocks, str):
            blocks = json.loads(blocks)
        msg = self._post(cid, text, p.get("thread_ts"),
                         mrkdwn=None if mrkdwn is None else str(mrkdwn).lower() != "false")
        msg.blocks = list(blocks)
        metadata = p.get("metadata")
        if isinstance(metadata, str):
            metadata = json.loads(metadata)
        if isinstance(metadata, dict) and metadata.get("event_type"):
            msg.metadata = {"event_type": str(metadata["event_type"]),
                            "event_payload": dict(metadata.get("event_payload") or {})}
        return {"ok": True, "channel": cid, "ts": msg.ts,
                "message": {"type": "message", "text": text, "ts": msg.ts,
                            "user": self.bot_user_id, "bot_id": self.bot_id}}

    def _post(self, cid: str, text: str, thread_ts: Any, *, mrkdwn: bool | None = None,
              files: list[str] | None = None) -> Posted:
        msg = Posted(self.next_ts(), cid, text, str(thread_ts) if thread_ts else None,
                     mrkdwn, [text], files=files or [])
        self.posted.setdefault(cid, []).append(msg)
        if self.echo_bot_messages:
            ev = message_event(channel=cid, ts=msg.ts, text=text, user=self.bot_user_id,
                               bot_id=self.bot_id, thread_ts=msg.thread_ts,
                               channel_type=self.channels[cid].kind)
            self._spawn(self.deliver(ev))
        return msg

    def _find(self, cid: str, ts: str) -> Posted | None:
        return next((m for m in self.posted.get(cid, []) if m.ts == ts and not m.deleted), None)

    async def _m_conversations_history(self, p: dict[str, Any]) -> dict[str, Any]:
        """The bot's top-level messages of a channel, newest first (messages of others are not
        kept by the fake); `metadata` only with include_all_metadata, as Slack does."""
        return self._history(p, lambda m: m.thread_ts in (None, m.ts))

    async def _m_conversations_replies(self, p: dict[str, Any]) -> dict[str, Any]:
        """The bot's messages of the thread `ts` (the parent included when it is the bot's)."""
        ts = str(p.get("ts") or "")
        if not ts:
            return {"ok": False, "error": "invalid_arguments"}
        return self._history(p, lambda m: m.thread_ts == ts or m.ts == ts)

    def _history(self, p: dict[str, Any], keep: Any) -> dict[str, Any]:
        cid = str(p.get("channel", ""))
        if err := self._channel_error(cid):
            return {"ok": False, "error": err}
        oldest = float(p.get("oldest") or 0)
        with_meta = str(p.get("include_all_metadata", "")).lower() in ("1", "true")
        out = []
        for m in reversed(self.posted.get(cid, [])):
            if m.deleted or float(m.ts) <= oldest or not keep(m):
                continue
            item: dict[str, Any] = {"type": "message", "ts": m.ts, "text": m.text,
                                    "user": self.bot_user_id, "bot_id": self.bot_id}
            if m.thread_ts:
                item["thread_ts"] = m.thread_ts
            if with_meta and m.metadata:
                item["metadata"] = m.metadata
            out.append(item)
        return {"ok": True, "messages": out[: int(p.get("limit") or 100)], "has_more": False}

    async def _m_chat_update(self, p: dict[str, Any]) -> dict[str, Any]:
        cid, ts, text = str(p.get("channel", "")), str(p.get("ts", "")), str(p.get("text") or "")
        if err := self._channel_error(cid):
            return {"ok": False, "error": err}
        msg = self._find(cid, ts)
        if msg is None:
            return {"ok": False, "error": "message_not_found"}
        if len(text) > 40000:
            return {"ok": False, "error": "msg_too_long"}
        msg.text = text
        msg.history.append(text)
        if self.echo_bot_messages:
            ev = message_event(channel=cid, ts=self.next_ts(), text="", user=None,
                               subtype="message_changed", channel_type=self.channels[cid].kind,
                               extra={"message": {"type": "message", "text": text, "ts": ts,
                                                  "user": self.bot_user_id, "edited": {}}})
            self._spawn(self.deliver(ev))
        return {"ok": True, "channel": cid, "ts": ts, "text": text}

    async def _m_chat_delete(self, p: dict[str, Any]) -> dict[str, Any]:
        cid, ts = str(p.get("channel", "")), str(p.get("ts", ""))
        msg = self._find(cid, ts)
        if msg is None:
            return {"ok": False, "error": "message_not_found"}
        msg.deleted = True
        return {"ok": True, "channel": cid, "ts": ts}

    async def _m_conversations_info(self, p: dict[str, Any]) -> dict[str, Any]:
        ch = self.channels.get(str(p.get("channel", "")))
        if ch is None:
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "channel": {
            "id": ch.id, "name": ch.name, "is_im": ch.kind == "im", "is_mpim": ch.kind == "mpim",
            "is_channel": ch.kind == "channel", "is_group": ch.kind == "group",
            "is_private": ch.kind != "channel", "is_archived": ch.archived}}

    async def _m_users_info(self, p: dict[str, Any]) -> dict[str, Any]:
        user = self.users.get(str(p.get("user", "")))
        if user is None:
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "user": user}

    async def _m_files_upload(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"ok": False, "error": "method_deprecated"}

    async def _m_files_getUploadURLExternal(self, p: dict[str, Any]) -> dict[str, Any]:
        if not p.get("filename") or not str(p.get("length", "")).isdigit():
            return {"ok": False, "error": "invalid_arguments"}
        fid = f"F{next(self._seq):06d}"
        self.uploads[fid] = {"name": p["filename"], "length": int(p["length"]), "data": None}
        return {"ok": True, "upload_url": f"{self.base_url}/upload/{fid}", "file_id": fid}

    async def _m_files_completeUploadExternal(self, p: dict[str, Any]) -> dict[str, Any]:
        files = p.get("files")
        items = json.loads(files) if isinstance(files, str) else files or []
        out = []
        for item in items:
            up = self.uploads.get(str(item.get("id")))
            if up is None or up["data"] is None:
                return {"ok": False, "error": "file_not_found"}
            out.append({"id": item["id"], "title": item.get("title") or up["name"],
                        "name": up["name"], "size": len(up["data"])})
        cid = p.get("channel_id")
        if cid:
            if err := self._channel_error(str(cid)):
                return {"ok": False, "error": err}
            self._post(str(cid), str(p.get("initial_comment") or ""), p.get("thread_ts"),
                       files=[f["name"] for f in out])
        return {"ok": True, "files": out}

    async def _upload(self, request: web.Request) -> web.Response:
        up = self.uploads.get(request.match_info["fid"])
        if up is None:
            return web.Response(status=404, text="not found")
        up["data"] = await request.read()
        return web.Response(text=f"OK - {len(up['data'])}", content_type="text/plain")

    async def _download(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {self.bot_token}":
            return web.Response(status=403, text="forbidden")
        fid = request.match_info["key"].rsplit("-", 1)[-1]
        f = self.files.get(fid)
        if f is None:
            return web.Response(status=404, text="not found")
        await asyncio.sleep(self.download_delay_s.get(fid, 0.0))
        return web.Response(body=f["data"], content_type=f["mimetype"])

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- Socket Mode --------------------------------------------------------------------------

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.sockets.append(ws)
        await ws.send_json({"type": "hello", "num_connections": len(self.sockets),
                            "debug_info": {"host": "fake-slack", "approximate_connection_time":
                                           18060},
                            "connection_info": {"app_id": self.app_id}})
        for env in list(self.pending.values()):  # Slack retries what was never acked
            env["retry_attempt"] = env.get("retry_attempt", 0) + 1
            env["retry_reason"] = "timeout"
            await self._send_envelope(ws, env)
        await self._notify()
        try:
            async for msg in ws:
                if msg.type != aiohttp.WSMsgType.TEXT:
                    continue
                data = json.loads(msg.data)
                eid = data.get("envelope_id")
                if eid and self.pending.pop(eid, None) is not None:
                    self.acked.append(eid)
                    if self.deliveries.get(eid):
                        self.acked_delivery[eid] = self.deliveries[eid][-1]
                    await self._notify()
        finally:
            if ws in self.sockets:
                self.sockets.remove(ws)
            await self._notify()
        return ws

    def live_sockets(self) -> list[web.WebSocketResponse]:
        return [ws for ws in self.sockets if not ws.closed]

    async def disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask clients to reconnect, as Slack does every few hours."""
        for ws in self.live_sockets():
            await ws.send_json({"type": "disconnect", "reason": reason,
                                "debug_info": {"host": "fake-slack"}})

    async def drop(self) -> None:
        """Cut every socket without a close handshake."""
        for ws in list(self.sockets):
            req = getattr(ws, "_req", None)
            transport = getattr(req, "transport", None) if req is not None else None
            if transport is not None:
                transport.abort()
            else:
                await ws.close(code=1011)
            if ws in self.sockets:
                self.sockets.remove(ws)
        await self._notify()

    # -- delivering events --------------------------------------------------------------------

    async def deliver(self, event: dict[str, Any], *, retry_of: dict[str, Any] | None = None
                      ) -> dict[str, Any]:
        """Deliver one event (socket envelope or signed HTTP POST); returns the event_callback
        payload. `retry_of` redelivers an earlier payload with the same event_id."""
        payload = retry_of or event_callback(event, team_id=self.team_id, api_app_id=self.app_id,
                                             bot_user_id=self.bot_user_id)
        if self.mode == "http":
            retry = None if retry_of is None else 1
            await self.post_event(payload, retry_num=retry)
            return payload
        env = envelope(payload, retry_attempt=0 if retry_of is None else 1,
                       retry_reason="" if retry_of is None else "timeout")
        self.pending[env["envelope_id"]] = env
        self._sent_at[env["envelope_id"]] = time.monotonic()
        for ws in self.live_sockets()[-1:]:
            with contextlib.suppress(Exception):
                await self._send_envelope(ws, env)
        return payload

    async def _send_envelope(self, ws: web.WebSocketResponse, env: dict[str, Any]) -> None:
        """Send one envelope on a socket, numbering the delivery (see `deliveries`)."""
        self.deliveries.setdefault(env["envelope_id"], []).append(next(self._delivery_no))
        await ws.send_json(env)

    async def _retry_unacked(self, after_s: float) -> None:
        while True:
            await asyncio.sleep(after_s / 2)
            now = time.monotonic()
            for eid, env in list(self.pending.items()):
                if now - self._sent_at.get(eid, now) < after_s:
                    continue
                env["retry_attempt"] = env.get("retry_attempt", 0) + 1
                env["retry_reason"] = "timeout"
                self._sent_at[eid] = now
                for ws in self.live_sockets()[-1:]:
                    with contextlib.suppress(Exception):
                        await self._send_envelope(ws, env)

    async def post_event(self, payload: dict[str, Any], *, retry_num: int | None = None,
                         secret: str | None = None, timestamp: int | None = None
                         ) -> tuple[int, str]:
        """POST a signed Events API request to `events_url`; returns (status, body)."""
        assert self._http is not None and self.events_url, "events_url is not set"
        body = json.dumps(payload)
        headers = signed_headers(secret or self.signing_secret, body, timestamp=timestamp,
                                 retry_num=retry_num)
        async with self._http.post(self.events_url, data=body, headers=headers) as resp:
            return resp.status, await resp.text()

    async def url_verification(self, challenge: str) -> tuple[int, str]:
        return await self.post_event({"token": "unused", "challenge": challenge,
                                      "type": "url_verification"})

    async def user_message(
        self,
        text: str,
        *,
        channel: str = "D0001",
        user: str = "U0001",
        thread_ts: str | None = None,
        mention: bool = False,
        files: list[dict[str, Any]] | None = None,
        subtype: str | None = None,
        bot_id: str | None = None,
        parent_user_id: str | None = None,
    ) -> str:
        """A user posts `text`; returns its ts. A mention outside DMs is delivered twice, as
        Slack does: a `message` event and an `app_mention` event."""
        ts = self.next_ts()
        kind = self.channels[channel].kind
        if mention:
            text = f"<@{self.bot_user_id}> {text}"
        common: dict[str, Any] = {"channel": channel, "ts": ts, "text": text, "user": user,
                                  "thread_ts": thread_ts, "parent_user_id": parent_user_id,
                                  "files": files}
        self.last_delivered = await self.deliver(
            message_event(channel_type=kind, subtype=subtype, bot_id=bot_id, **common))
        if mention and kind != "im":
            self.last_delivered = await self.deliver(
                message_event(channel_type=kind, event_type="app_mention", **common))
        return ts

    def buttons(self, channel: str, ts: str) -> list[dict[str, Any]]:
        """The buttons of bot message `ts` (every `actions` block's elements)."""
        msg = self._find(channel, ts)
        assert msg is not None
        return [e for b in msg.blocks if b.get("type") == "actions" for e in b["elements"]]

    async def press(self, channel: str, ts: str, action_id: str, *, user: str = "U0001",
                    again: dict[str, Any] | None = None) -> dict[str, Any]:
        """`user` presses the button `action_id` under bot message `ts`: an `interactive`
        envelope with a `block_actions` payload (`again`: that payload once more)."""
        msg = self._find(channel, ts)
        assert msg is not None
        button = next(b for b in self.buttons(channel, ts) if b["action_id"] == action_id)
        payload = again or block_actions(
            channel=channel, user=user, team_id=self.team_id, api_app_id=self.app_id,
            message={"type": "message", "ts": msg.ts, "text": msg.text,
                     "user": self.bot_user_id, "bot_id": self.bot_id, "blocks": msg.blocks},
            action={"action_id": button["action_id"], "value": button.get("value", ""),
                    "text": button["text"]})
        env = envelope(payload, kind="interactive")
        env["accepts_response_payload"] = True
        self.pending[env["envelope_id"]] = env
        for ws in self.live_sockets()[-1:]:
            with contextlib.suppress(Exception):
                await ws.send_json(env)
        return payload

    async def user_edit(self, channel: str, ts: str, text: str, *, user: str = "U0001",
                        thread_ts: str | None = None) -> dict[str, Any]:
        """The user edits their message `ts`: a `message_changed` event, as Slack sends it."""
        inner: dict[str, Any] = {"type": "message", "text": text, "ts": ts, "user": user,
                                 "edited": {"user": user, "ts": self.next_ts()}}
        if thread_ts is not None:
            inner["thread_ts"] = thread_ts
        ev = message_event(channel=channel, ts=self.next_ts(), text="", user=None,
                           subtype="message_changed", channel_type=self.channels[channel].kind,
                           extra={"message": inner})
        return await self.deliver(ev)

    async def redeliver_last(self) -> None:
        assert self.last_delivered is not None
        await self.redeliver(self.last_delivered)

    async def redeliver(self, payload: dict[str, Any]) -> None:
        """Deliver an earlier event_callback again (same event_id), as a Slack retry."""
        await self.deliver(payload["event"], retry_of=payload)


def _ok_false(error: str) -> web.Response:
    return web.json_response({"ok": False, "error": error})
