"""A fake Telegram Bot API server (aiohttp, 127.0.0.1, random port) for tests.

    async with FakeBotApi() as api:
        adapter = TelegramAdapter("telegram", {"token": api.token, "base_url": api.base_url,
                                               "base_file_url": api.base_file_url})
        api.send_user(api.private_chat(), "hello")          # a user writes to the bot
        api.bot_messages(chat_id)                           # what the bot posted (with edits)

It speaks the real wire protocol (`/bot<token>/<method>`, `/file/bot<token>/<path>`):
getUpdates long polling with offset semantics (an offset confirms everything below it; the
call returns as soon as an update is queued; a newer poll ends an older one with 409 Conflict,
and polling while a webhook is set is a 409 too), webhook delivery with the secret header,
and the errors the real API gives (429 retry_after, too long, can't parse entities, blocked,
not modified, chat not found, thread not found).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from tests.telegram.fake_html import EntityError, visible_text
from tests.telegram.fake_updates import USER, Chat, entities_for, now, utf16_len

__all__ = ["BOT_USER", "USER", "BotMsg", "Chat", "FakeBotApi", "Upload"]

BOT_USER: dict[str, Any] = {"id": 777000111, "is_bot": True, "first_name": "Hermes",
                            "username": "hermes_test_bot"}
MAX_TEXT = 4096
MAX_DOWNLOAD = 20 * 1024 * 1024
SEND_METHODS = frozenset({"sendMessage", "editMessageText", "sendChatAction", "sendPhoto",
                          "sendDocument", "sendVoice", "sendAudio", "sendVideo", "deleteMessage"})
CONFLICT_OTHER = ("Conflict: terminated by other getUpdates request; make sure that only one "
                  "bot instance is running")
CONFLICT_WEBHOOK = ("Conflict: can't use getUpdates method while webhook is active; use "
                    "deleteWebhook to delete the webhook first")


class ApiError(Exception):
    def __init__(self, status: int, description: str, **parameters: Any) -> None:
        super().__init__(description)
        self.status, self.description, self.parameters = status, description, parameters


@dataclass(frozen=True)
class Upload:
    filename: str
    data: bytes


@dataclass
class BotMsg:
    """A message the bot posted: final visible text plus every version it had."""

    message_id: int
    chat_id: str
    text: str
    parse_mode: str | None = None
    thread_id: int | None = None
    reply_to: int | None = None
    kind: str = "text"
    filename: str | None = None
    data: bytes = b""
    versions: list[str] = field(default_factory=list)
    deleted: bool = False
    #: Inline keyboard buttons (`text`, `callback_data`), row by row flattened.
    buttons: list[dict[str, Any]] = field(default_factory=list)

    @property
    def edits(self) -> int:
        return max(len(self.versions) - 1, 0)


class FakeBotApi:
    """Scriptable Bot API. Use as an async context manager."""

    def __init__(self, *, token: str = "123456:TEST-fake-token", bot_user: dict[str, Any] | None
                 = None) -> None:
        self.token = token
        self.bot_user = dict(bot_user or BOT_USER)
        self.port = 0
        self.chats: dict[str, Chat] = {}
        self.pending: list[dict[str, Any]] = []
        self.delivered: list[dict[str, Any]] = []
        self.messages: dict[str, list[BotMsg]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.typing: Counter[tuple[str, int | None]] = Counter()
        self.commands: list[dict[str, Any]] = []
        self.files: dict[str, tuple[bytes, str]] = {}
        self.downloads: list[str] = []
        #: file name -> seconds before the file server answers (a stalled download)
        self.download_delay_s: dict[str, float] = {}
        #: file name -> the `file_path` getFile answers instead of the real one
        self.file_path_override: dict[str, str] = {}
        self.blocked: set[str] = set()
        self.answered_callbacks: list[str] = []
        self.webhook: dict[str, Any] | None = None
        self.webhook_posts: list[tuple[int, int]] = []  # (update_id, HTTP status)
        self.conflicts_next = 0
        self.hold_updates = False
        self.slow_s = 0.0  # every call but getUpdates waits this long before it is answered
        self._failures: list[tuple[frozenset[str], ApiError]] = []
        self._update_ids = itertools.count(1000)
        self._file_ids = itertools.count(1)
        self._msg_ids: dict[str, itertools.count[int]] = {}
        self._forced: set[int] = set()
        self._poll_gen = 0
        self._drop_gen = 0
        self._cond = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._webhook_task: asyncio.Task[None] | None = None
        self._http: aiohttp.ClientSession | None = None

    # -- life cycle -----------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/bot"

    @property
    def base_file_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/file/bot"

    def settings(self, **extra: Any) -> dict[str, Any]:
        """Adapter settings pointing at this server."""
        return {"token": self.token, "base_url": self.base_url,
                "base_file_url": self.base_file_url, "poll_timeout_s": 2,
                "conflict_backoff_s": 0.05, "network_backoff_s": 0.05, **extra}

    async def start(self) -> FakeBotApi:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", r"/bot{token}/{method}", self._api)
        app.router.add_get(r"/file/bot{token}/{path:.+}", self._file)
        self._runner = web.AppRunner(app, shutdown_timeout=0.2, access_log=None,
                                     handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._webhook_task is not None:
            self._webhook_task.cancel()
            await asyncio.gather(self._webhook_task, return_exceptions=True)
        if self._http is not None:
            await self._http.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeBotApi:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- scripting ------------------------------------------------------------------------
    def fail_next(self, methods: set[str] | frozenset[str], status: int, description: str,
                  **parameters: Any) -> None:
        """The next call of one of `methods` answers this error."""
        self._failures.append((frozenset(methods), ApiError(status, description, **parameters)))

    def clear_failures(self) -> None:
        """Forget every scripted error not answered yet."""
        self._failures.clear()

    def failures_left(self, method: str) -> int:
        """Scripted errors for `method` not answered yet."""
        return sum(1 for methods, _ in self._failures if method in methods)

    def rate_limit_next(self, retry_after: int, methods: frozenset[str] = SEND_METHODS) -> None:
        self.fail_next(methods, 429, f"Too Many Requests: retry after {retry_after}",
                       retry_after=retry_after)

    async def drop_connections(self) -> None:
        """Abort every in-flight getUpdates connection (like a proxy or NAT dropping it)."""
        self._drop_gen += 1
        async with self._cond:
            self._cond.notify_all()

    # -- chats and user messages ----------------------------------------------------------
    def private_chat(self, user_id: int = USER["id"]) -> str:
        return self._chat(Chat(id=user_id, type="private"))

    def group_chat(self, chat_id: int = -1001, *, supergroup: bool = True) -> str:
        return self._chat(Chat(id=chat_id, type="supergroup" if supergroup else "group",
                               title="Team"))

    def forum_chat(self, chat_id: int = -100777, topics: tuple[int, ...] = ()) -> str:
        return self._chat(Chat(id=chat_id, type="supergroup", title="Forum", is_forum=True,
                               topics=set(topics)))

    def add_topic(self, chat_id: str, thread_id: int) -> None:
        self.chats[chat_id].topics.add(thread_id)

    def _chat(self, chat: Chat) -> str:
        key = str(chat.id)
        self.chats.setdefault(key, chat)
        return key

    def _next_mid(self, chat_id: str) -> int:
        return next(self._msg_ids.setdefault(chat_id, itertools.count(1)))

    def add_file(self, data: bytes, name: str, *, size: int | None = None) -> dict[str, Any]:
        n = next(self._file_ids)
        fid = f"file-{n}"
        self.files[fid] = (data, f"files/{n}_{name}")
        return {"file_id": fid, "file_unique_id": f"uniq{n}",
                "file_size": len(data) if size is None else size}

    def user_message(
        self,
        chat_id: str,
        text: str = "",
        *,
        user: dict[str, Any] | None = None,
        thread_id: int | None = None,
        reply_to: int | None = None,
        photo: bytes | None = None,
        document: tuple[str, bytes] | None = None,
        voice: bytes | None = None,
        file_size: int | None = None,
        text_mention_bot: bool = False,
        entities: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """A message from a user as Telegram would send it in an update. With files, `text`
        becomes the caption. In a forum topic the message carries the topic-creation message
        as `reply_to_message` unless it explicitly replies to something (Telegram's quirk)."""
        chat = self.chats[chat_id]
        msg: dict[str, Any] = {"message_id": self._next_mid(chat_id), "date": now(),
                               "chat": chat.to_json(), "from": dict(user or USER)}
        has_file = photo is not None or document is not None or voice is not None
        key, ent_key = ("caption", "caption_entities") if has_file else ("text", "entities")
        if text:
            msg[key] = text
            ents = entities_for(text)
            if text_mention_bot:
                ents.append({"type": "text_mention", "offset": 0,
                             "length": utf16_len(text.split()[0]), "user": self.bot_user})
            ents.extend(entities or ())
            if ents:
                msg[ent_key] = ents
        if photo is not None:
            big = self.add_file(photo, "photo.jpg", size=file_size)
            small = self.add_file(photo[:16], "thumb.jpg")
            msg["photo"] = [{**small, "width": 90, "height": 90},
                            {**big, "width": 800, "height": 600}]
        if document is not None:
            name, data = document
            msg["document"] = {**self.add_file(data, name, size=file_size), "file_name": name,
                               "mime_type": "application/octet-stream"}
        if voice is not None:
            msg["voice"] = {**self.add_file(voice, "voice.ogg", size=file_size), "duration": 2,
                            "mime_type": "audio/ogg"}
        if thread_id is not None and chat.is_forum:
            chat.topics.add(thread_id)
            msg["message_thread_id"] = thread_id
            msg["is_topic_message"] = True
            msg["reply_to_message"] = {
                "message_id": thread_id, "date": now(), "chat": chat.to_json(),
                "from": dict(USER), "message_thread_id": thread_id, "is_topic_message": True,
                "forum_topic_created": {"name": f"Topic {thread_id}", "icon_color": 7322096}}
        if reply_to is not None:
            msg["reply_to_message"] = self._message_json(chat_id, reply_to)
        return msg

    def _message_json(self, chat_id: str, message_id: int) -> dict[str, Any]:
        for m in self.messages.get(chat_id, []):
            if m.message_id == message_id:
                return self._bot_msg_json(m)
        return {"message_id": message_id, "date": now(), "chat": self.chats[chat_id].to_json(),
                "from": dict(USER), "text": "earlier message"}

    def enqueue(self, message: dict[str, Any]) -> dict[str, Any]:
        """Queue an update carrying `message`; returns the update."""
        update = {"update_id": next(self._update_ids), "message": message}
        self.pending.append(update)
        self._changed()
        return update

    def press(self, chat_id: str, message_id: int, data: str, *,
              user: dict[str, Any] | None = None) -> dict[str, Any]:
        """A user presses the inline button with `data` under bot message `message_id`:
        queues a `callback_query` update as Telegram sends it; returns the update."""
        msg = self._find(chat_id, message_id)
        assert msg is not None and any(b.get("callback_data") == data for b in msg.buttons), \
            "no such button"
        update = {"update_id": next(self._update_ids), "callback_query": {
            "id": f"cbq{next(self._file_ids)}", "from": dict(user or USER),
            "message": self._bot_msg_json(msg), "chat_instance": f"ci{chat_id}",
            "data": data}}
        self.pending.append(update)
        self._changed()
        return update

    def send_user(self, chat_id: str, text: str = "", **kw: Any) -> dict[str, Any]:
        return self.enqueue(self.user_message(chat_id, text, **kw))

    def edit_user(self, message: dict[str, Any], text: str) -> dict[str, Any]:
        """The user edits an earlier message: an `edited_message` update with the new text."""
        edited = {**message, "text": text, "edit_date": now()}
        edited.pop("entities", None)
        if ents := entities_for(text):
            edited["entities"] = ents
        update = {"update_id": next(self._update_ids), "edited_message": edited}
        self.pending.append(update)
        self._changed()
        return update

    def redeliver(self, update: dict[str, Any]) -> None:
        """Deliver an already confirmed update again (same update_id), as after a crash
        between recording and confirming: the next poll returns it whatever its offset."""
        self._forced.add(update["update_id"])
        if all(u["update_id"] != update["update_id"] for u in self.pending):
            self.pending.append(update)
        self.pending.sort(key=lambda u: u["update_id"])
        self._changed()

    def _changed(self) -> None:
        async def notify() -> None:
            async with self._cond:
                self._cond.notify_all()

        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(notify())
        if self.webhook is not None:
            self._ensure_webhook_delivery()

    # -- transcript -----------------------------------------------------------------------
    def bot_messages(self, chat_id: str, *, include_deleted: bool = False) -> list[BotMsg]:
        return [m for m in self.messages.get(chat_id, []) if include_deleted or not m.deleted]

    def typing_count(self, chat_id: str, thread_id: int | None = None) -> int:
        return self.typing[(chat_id, thread_id)]

    def calls_of(self, method: str) -> list[dict[str, Any]]:
        return [p for m, p in self.calls if m == method]

    # -- HTTP -----------------------------------------------------------------------------
    async def _api(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        params = await self._params(request)
        self.calls.append((method, params))
        if request.match_info["token"] != self.token:
            return self._error(ApiError(401, "Unauthorized"))
        handler = getattr(self, f"_m_{method}", None)
        if handler is None:
            return self._error(ApiError(404, "Not Found"))
        if self.slow_s and method != "getUpdates":
            await asyncio.sleep(self.slow_s)
        for i, (methods, err) in enumerate(self._failures):
            if method in methods:
                del self._failures[i]
                return self._error(err)
        try:
            if method == "getUpdates":
                return await self._m_getUpdates(request, params)
            return web.json_response({"ok": True, "result": await handler(params)})
        except ApiError as err:
            return self._error(err)

    @staticmethod
    def _error(err: ApiError) -> web.Response:
        body: dict[str, Any] = {"ok": False, "error_code": err.status,
                                "description": err.description}
        if err.parameters:
            body["parameters"] = err.parameters
        return web.json_response(body, status=err.status)

    @staticmethod
    async def _params(request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.can_read_body:
            for key, value in (await request.post()).items():
                if isinstance(value, web.FileField):
                    params[key] = Upload(value.filename, value.file.read())
                else:
                    params[key] = value
        return params

    async def _file(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.Response(status=401)
        path = request.match_info["path"]
        for data, fpath in self.files.values():
            if fpath == path:
                self.downloads.append(path)
                await asyncio.sleep(self.download_delay_s.get(path.split("_", 1)[-1], 0.0))
                return web.Response(body=data, content_type="application/octet-stream")
        return web.Response(status=404)

    # -- getUpdates and webhooks ----------------------------------------------------------
    async def _m_getUpdates(self, request: web.Request, p: dict[str, Any]) -> web.StreamResponse:
        if self.webhook is not None:
            raise ApiError(409, CONFLICT_WEBHOOK)
        if self.conflicts_next > 0:
            self.conflicts_next -= 1
            raise ApiError(409, CONFLICT_OTHER)
        offset = _int(p.get("offset"))
        limit = _int(p.get("limit")) or 100
        timeout = float(_int(p.get("timeout")) or 0)
        if offset is not None:
            if offset < 0:
                self.pending = self.pending[offset:]
            else:
                self._confirm(offset)
        self._poll_gen += 1
        mine, drops = self._poll_gen, self._drop_gen
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        async with self._cond:
            self._cond.notify_all()
            while True:
                if self._poll_gen != mine:
                    raise ApiError(409, CONFLICT_OTHER)
                if self._drop_gen != drops:
                    if request.transport is not None:
                        request.transport.abort()
                    raise ApiError(502, "Bad Gateway")
                if self.pending and not self.hold_updates:
                    batch = self.pending[:limit]
                    self._forced -= {u["update_id"] for u in batch}
                    return web.json_response({"ok": True, "result": batch})
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return web.json_response({"ok": True, "result": []})
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._cond.wait(), remaining)

    def _confirm(self, offset: int) -> None:
        keep = []
        for u in self.pending:
            forced = u["update_id"] in self._forced
            (keep if forced or u["update_id"] >= offset else self.delivered).append(u)
        self.pending = keep

    async def _m_setWebhook(self, p: dict[str, Any]) -> bool:
        self.webhook = {"url": p["url"], "secret_token": p.get("secret_token")}
        self._ensure_webhook_delivery()
        return True

    async def _m_deleteWebhook(self, p: dict[str, Any]) -> bool:
        self.webhook = None
        if str(p.get("drop_pending_updates", "")).lower() == "true":
            self.pending.clear()
        return True

    async def _m_getWebhookInfo(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"url": (self.webhook or {}).get("url", ""), "has_custom_certificate": False,
                "pending_update_count": len(self.pending)}

    def _ensure_webhook_delivery(self) -> None:
        if self._webhook_task is None or self._webhook_task.done():
            self._webhook_task = asyncio.get_running_loop().create_task(self._deliver_webhooks())

    async def _deliver_webhooks(self) -> None:
        self._http = self._http or aiohttp.ClientSession()
        while self.webhook is not None and self.pending:
            update = self.pending[0]
            headers = {}
            if self.webhook.get("secret_token"):
                headers["X-Telegram-Bot-Api-Secret-Token"] = self.webhook["secret_token"]
            status = await self.post_webhook(update, headers=headers)
            if status == 200 and self.pending and self.pending[0] is update:
                self.delivered.append(self.pending.pop(0))
            elif status != 200:
                await asyncio.sleep(0.1)

    async def post_webhook(self, update: dict[str, Any], *, headers: dict[str, str] | None = None,
                           url: str | None = None) -> int:
        """POST one update to the webhook URL (or `url`); returns the HTTP status (0 = no
        connection). Used by the delivery loop and directly by tests (e.g. a forged request)."""
        self._http = self._http or aiohttp.ClientSession()
        target = url or (self.webhook or {}).get("url")
        assert target, "no webhook URL"
        try:
            async with self._http.post(target, json=update, headers=headers or {}) as resp:
                status = resp.status
        except aiohttp.ClientError:
            status = 0
        self.webhook_posts.append((update["update_id"], status))
        return status

    # -- other methods --------------------------------------------------------------------
    async def _m_getMe(self, p: dict[str, Any]) -> dict[str, Any]:
        return {**self.bot_user, "can_join_groups": True, "can_read_all_group_messages": False,
                "supports_inline_queries": False}

    async def _m_setMyCommands(self, p: dict[str, Any]) -> bool:
        self.commands = _json(p.get("commands")) or []
        return True

    async def _m_getFile(self, p: dict[str, Any]) -> dict[str, Any]:
        fid = str(p.get("file_id"))
        if fid not in self.files:
            raise ApiError(400, "Bad Request: invalid file_id")
        data, path = self.files[fid]
        if len(data) > MAX_DOWNLOAD:
            raise ApiError(400, "Bad Request: file is too big")
        return {"file_id": fid, "file_unique_id": "u" + fid, "file_size": len(data),
                "file_path": self.file_path_override.get(path.split("_", 1)[-1], path)}

    def _target(self, p: dict[str, Any]) -> tuple[str, Chat, int | None]:
        chat_id = str(p.get("chat_id"))
        if chat_id in self.blocked:
            raise ApiError(403, "Forbidden: bot was blocked by the user")
        chat = self.chats.get(chat_id)
        if chat is None:
            raise ApiError(400, "Bad Request: chat not found")
        thread = _int(p.get("message_thread_id"))
        if thread is not None and chat.is_forum and thread not in chat.topics:
            raise ApiError(400, "Bad Request: message thread not found")
        if thread is not None and not chat.is_forum:
            thread = None
        return chat_id, chat, thread

    @staticmethod
    def _visible(text: str, parse_mode: str | None) -> str:
        if not text.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        if parse_mode == "HTML":
            try:
                text = visible_text(text)
            except EntityError as exc:
                raise ApiError(400, f"Bad Request: can't parse entities: {exc}") from exc
        if utf16_len(text) > MAX_TEXT:
            raise ApiError(400, "Bad Request: message is too long")
        return text

    def _store(self, chat_id: str, msg: BotMsg) -> dict[str, Any]:
        self.messages.setdefault(chat_id, []).append(msg)
        msg.versions.append(msg.text)
        return self._bot_msg_json(msg)

    def _reply_to(self, chat_id: str, p: dict[str, Any]) -> int | None:
        params = _json(p.get("reply_parameters")) or {}
        mid = params.get("message_id") or _int(p.get("reply_to_message_id"))
        return int(mid) if mid is not None else None

    async def _m_sendMessage(self, p: dict[str, Any]) -> dict[str, Any]:
        chat_id, _chat, thread = self._target(p)
        mode = p.get("parse_mode")
        text = self._visible(str(p.get("text", "")), mode)
        msg = BotMsg(self._next_mid(chat_id), chat_id, text, mode, thread,
                     self._reply_to(chat_id, p), buttons=self._buttons(p))
        return self._store(chat_id, msg)

    @staticmethod
    def _buttons(p: dict[str, Any]) -> list[dict[str, Any]]:
        markup = _json(p.get("reply_markup")) or {}
        rows = markup.get("inline_keyboard") or []
        buttons = [dict(b) for row in rows for b in row]
        for b in buttons:
            if len(str(b.get("callback_data", "")).encode()) > 64:
                raise ApiError(400, "Bad Request: BUTTON_DATA_INVALID")
        return buttons

    async def _m_answerCallbackQuery(self, p: dict[str, Any]) -> bool:
        self.answered_callbacks.append(str(p.get("callback_query_id")))
        return True

    def _find(self, chat_id: str, message_id: int | None) -> BotMsg | None:
        for m in self.messages.get(chat_id, []):
            if m.message_id == message_id and not m.deleted:
                return m
        return None

    async def _m_editMessageText(self, p: dict[str, Any]) -> dict[str, Any]:
        chat_id, _chat, _ = self._target(p)
        msg = self._find(chat_id, _int(p.get("message_id")))
        if msg is None:
            raise ApiError(400, "Bad Request: message to edit not found")
        mode = p.get("parse_mode")
        text = self._visible(str(p.get("text", "")), mode)
        if text == msg.text and mode == msg.parse_mode:
            raise ApiError(400, "Bad Request: message is not modified: specified new message "
                           "content and reply markup are exactly the same as a current content "
                           "and reply markup of the message")
        msg.text, msg.parse_mode = text, mode
        msg.versions.append(text)
        return self._bot_msg_json(msg)

    async def _m_deleteMessage(self, p: dict[str, Any]) -> bool:
        chat_id, _chat, _ = self._target(p)
        msg = self._find(chat_id, _int(p.get("message_id")))
        if msg is None:
            raise ApiError(400, "Bad Request: message to delete not found")
        msg.deleted = True
        return True

    async def _m_sendChatAction(self, p: dict[str, Any]) -> bool:
        chat_id, _chat, thread = self._target(p)
        self.typing[(chat_id, thread)] += 1
        return True

    async def _send_file(self, p: dict[str, Any], kind: str) -> dict[str, Any]:
        chat_id, _chat, thread = self._target(p)
        upload = p.get(kind)
        if not isinstance(upload, Upload):
            raise ApiError(400, f"Bad Request: there is no {kind} in the request")
        caption = str(p.get("caption") or "")
        if utf16_len(caption) > 1024:
            raise ApiError(400, "Bad Request: message caption is too long")
        msg = BotMsg(self._next_mid(chat_id), chat_id, caption, None, thread,
                     self._reply_to(chat_id, p), kind=kind, filename=upload.filename,
                     data=upload.data)
        return self._store(chat_id, msg)

    async def _m_sendPhoto(self, p: dict[str, Any]) -> dict[str, Any]:
        return await self._send_file(p, "photo")

    async def _m_sendDocument(self, p: dict[str, Any]) -> dict[str, Any]:
        return await self._send_file(p, "document")

    async def _m_sendVoice(self, p: dict[str, Any]) -> dict[str, Any]:
        return await self._send_file(p, "voice")

    async def _m_sendAudio(self, p: dict[str, Any]) -> dict[str, Any]:
        return await self._send_file(p, "audio")

    async def _m_sendVideo(self, p: dict[str, Any]) -> dict[str, Any]:
        return await self._send_file(p, "video")

    def _bot_msg_json(self, m: BotMsg) -> dict[str, Any]:
        chat = self.chats[m.chat_id]
        out: dict[str, Any] = {"message_id": m.message_id, "date": now(),
                               "chat": chat.to_json(), "from": dict(self.bot_user)}
        if m.thread_id is not None:
            out["message_thread_id"] = m.thread_id
            out["is_topic_message"] = True
        fref = {"file_id": f"sent-{m.chat_id}-{m.message_id}",
                "file_unique_id": f"s{m.message_id}", "file_size": len(m.data)}
        if m.kind == "text":
            out["text"] = m.text
            return out
        if m.text:
            out["caption"] = m.text
        if m.kind == "photo":
            out["photo"] = [{**fref, "width": 100, "height": 100}]
        elif m.kind in ("voice", "audio"):
            out[m.kind] = {**fref, "duration": 1}
        elif m.kind == "video":
            out["video"] = {**fref, "width": 100, "height": 100, "duration": 1}
        else:
            out["document"] = {**fref, "file_name": m.filename}
        return out


def _int(value: Any) -> int | None:
    if value is None or value == "":
        return None
    return int(value)


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value
