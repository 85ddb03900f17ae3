"""aiohttp request handlers of the `api` adapter (OpenAI-compatible HTTP API).

Routes: `POST /v1/chat/completions` and `GET /v1/models`, both behind a bearer key.

- Principal: every key is one (`ApiSettings.principals`): a `{name, key}` entry is `name`, a
  bare key `key:<12 hex digits of its SHA-256>`; it is the user id of the events, and the key
  never leaves this module.
- Session: the request's `user` field, else the `X-Hermes-Session` header, else `default`.
  The gateway chat id is `<principal>:<session>`, so a key can only ever reach its own
  sessions, whatever name it sends.
- Event id (durable dedup): the `X-Hermes-Event-Id` or `Idempotency-Key` header, else a fresh
  uuid, always prefixed with the principal so keys cannot collide. A retry with the id of a turn
  this process still remembers (open, or one of the last 256 finished) attaches to that turn and
  gets its outcome; an id the gateway already recorded but this process does not know (e.g.
  after a restart) is answered 409 `duplicate_event`.
- Response headers `X-Hermes-Session` and `X-Hermes-Event-Id` tell the client which session
  and event id were used (percent-encoded when not plain ASCII).

Media: `image_url` (data: URLs), `input_audio` (base64 `data` + `format`) and `file`
(`file_data`, base64 or a data: URL, with `filename`) parts of the newest user message are
saved as attachments; the gateway reads them by their bytes like any platform's files (image
parts or a description, a transcript through `stt.provider`, a document's text). Per part
`gateway.media.max_inbound_mb`, together `max_message_mb`, at most `max_images_per_message`
images; any other part type is refused.

Status codes (OpenAI-style `{"error": {...}}` bodies): 400 bad JSON / no user message text or
media / an unsupported content part, a URL instead of data, or media over the limits / bad
session or event id, 401 missing or unknown key (also when no keys are configured), 409
duplicate event, 413 body over `max_body_bytes`, 502 the turn ended with `ok=False` (its error
message, configured keys redacted), 503 the gateway refused the event, 504 no `turn_complete`
within `turn_timeout_s`. A stream reports failures and timeouts as a `data: {"error": ...}`
event followed by `data: [DONE]`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

from aiohttp import web

from adapters.api.settings import ApiSettings
from adapters.api.turns import Turn, TurnRegistry
from adapters.api.wire import (
    MediaLimits,
    MediaPart,
    RequestError,
    completion_body,
    error_body,
    models_body,
    parse_chat_request,
    sse_chunk,
    sse_done,
    sse_error,
)
from gateway.events import Attachment, ChatType, MessageEvent, UserRef
from gateway.ports import AdapterContext
from hermes_common.redact import redact

__all__ = ["SESSION_HEADER", "EVENT_ID_HEADERS", "ApiServer"]

SESSION_HEADER = "X-Hermes-Session"
EVENT_ID_HEADERS = ("X-Hermes-Event-Id", "Idempotency-Key")
_MAX_ID_LEN = 256
DEFAULT_SESSION = "default"
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json_error(status: int, message: str, **kw: Any) -> web.Response:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return web.json_response(error_body(message, **kw), status=status, headers=headers)


class ApiServer:
    """Builds the aiohttp application; one instance per `start()` of the adapter."""

    def __init__(
        self, platform: str, settings: ApiSettings, turns: TurnRegistry, ctx: AdapterContext
    ) -> None:
        self._platform = platform
        self._settings = settings
        self._turns = turns
        self._ctx = ctx
        self._plain_keys = settings.keys()
        self._keys = [(hashlib.sha256(k.encode()).digest(), principal)
                      for principal, k in settings.principals()]

    def build_app(self) -> web.Application:
        app = web.Application(
            middlewares=[self._middleware], client_max_size=self._settings.max_body_bytes
        )
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        return app

    def redact(self, text: str) -> str:
        """`text` without any secret (`hermes_common.redact`), the configured keys included."""
        return redact(text, self._plain_keys)

    @web.middleware
    async def _middleware(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        self._ctx.progress()
        try:
            return await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return _json_error(exc.status, exc.reason, code=exc.reason.lower().replace(" ", "_"))
        except Exception as exc:  # one request must never take the server down
            self._ctx.logger.error("api_request_failed", method=request.method, path=request.path,
                                   error=type(exc).__name__)
            return _json_error(500, "internal server error", type_="server_error")

    def _authenticate(self, request: web.Request) -> str | None:
        """The principal of a valid bearer key, else None (constant time over all keys)."""
        scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            return None
        digest = hashlib.sha256(presented.strip().encode()).digest()
        found: str | None = None
        for key_digest, principal in self._keys:
            if hmac.compare_digest(digest, key_digest):
                found = principal
        return found

    async def _models(self, request: web.Request) -> web.StreamResponse:
        if self._authenticate(request) is None:
            return _unauthorized()
        return web.json_response(models_body(self._settings.model_name))

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        principal = self._authenticate(request)
        if principal is None:
            return _unauthorized()
        try:
            body = json.loads(await request.read())
        except ValueError:
            return _json_error(400, "the request body is not valid JSON", code="invalid_json")
        try:
            chat = parse_chat_request(body, limits=MediaLimits(
                part_bytes=self._ctx.max_attachment_bytes,
                total_bytes=self._ctx.max_message_bytes, images=self._ctx.max_images))
            session = _bounded(chat.user or request.headers.get(SESSION_HEADER), "session")
            client_event = _bounded(
                next((request.headers[h] for h in EVENT_ID_HEADERS if h in request.headers), None),
                "event id",
            )
        except RequestError as exc:
            return _json_error(400, exc.message, param=exc.param)
        session = session or DEFAULT_SESSION
        chat_id = f"{principal}:{session}"
        event_id = f"{principal}:{client_event or uuid.uuid4().hex}"
        self._turns.prune(max_age_s=2 * self._settings.turn_timeout_s)

        turn = self._turns.get(event_id)
        if turn is not None and turn.chat_id != chat_id:
            return _json_error(409, "this event id belongs to another session", code="conflict")
        if turn is None:
            turn = self._turns.open(event_id, chat_id)
            refusal = await self._emit(turn, principal, chat.text, chat.media)
            if refusal is not None:
                return refusal
        response_headers = {
            SESSION_HEADER: _header_value(session),
            EVENT_ID_HEADERS[0]: _header_value(event_id),
        }
        deadline = time.monotonic() + self._settings.turn_timeout_s
        turn.listeners += 1
        try:
            if chat.stream:
                return await self._stream(request, turn, deadline, response_headers)
            return await self._complete(turn, deadline, response_headers)
        finally:
            turn.listeners -= 1

    async def _emit(self, turn: Turn, principal: str, text: str,
                    media: tuple[MediaPart, ...] = ()) -> web.Response | None:
        try:
            attachments = await asyncio.to_thread(self._save_media, media)
        except OSError as exc:
            self._turns.discard(turn)
            self._ctx.logger.warning("api_media_not_saved", error=type(exc).__name__)
            return _json_error(503, "the attached media could not be stored",
                               type_="server_error")
        event = MessageEvent(
            platform=self._platform,
            event_id=turn.event_id,
            chat_id=turn.chat_id,
            chat_type=ChatType.DM,
            user=UserRef(id=principal, name=principal),
            text=text,
            message_id=turn.event_id,
            attachments=attachments,
        )
        try:
            accepted = await self._ctx.emit(event)
        except Exception as exc:  # reported to the client as 503
            self._turns.discard(turn)
            self._ctx.logger.warning("api_emit_failed", event_id=turn.event_id,
                                     error=type(exc).__name__)
            return _json_error(
                503, "the gateway could not accept the message", type_="server_error"
            )
        if not accepted:
            self._turns.discard(turn)
            return _json_error(409, "this event was already processed", code="duplicate_event")
        return None

    def _save_media(self, media: tuple[MediaPart, ...]) -> tuple[Attachment, ...]:
        """Write each image, recording and file into the adapter cache (the gateway moves
        them into the chat's own cache folder, and reads them by their bytes). Blocking."""
        if not media:
            return ()
        folder = self._ctx.cache_dir / self._platform
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        saved = []
        for part in media:
            path = folder / f"{part.kind}-{uuid.uuid4().hex[:12]}.bin"
            path.write_bytes(part.data)
            saved.append(Attachment(path=str(path), kind=part.kind, name=part.name,
                                    size=len(part.data)))
        return tuple(saved)

    def _failure_message(self, turn: Turn) -> str:
        return self.redact(turn.error or "the turn failed")

    async def _complete(self, turn: Turn, deadline: float, headers: dict[str, str]) -> web.Response:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(deadline - time.monotonic(), 0.0)):
                while not turn.done:
                    await turn.wait_change(len(turn.streamed))
        if not turn.done:
            return _json_error(
                504, "the turn did not complete in time", type_="timeout", code="turn_timeout"
            )
        if not turn.ok:
            return _json_error(502, self._failure_message(turn), type_="server_error")
        body = completion_body(f"chatcmpl-{uuid.uuid4().hex}", self._settings.model_name, turn.text)
        return web.json_response(body, headers=headers)

    async def _stream(
        self, request: web.Request, turn: Turn, deadline: float, headers: dict[str, str]
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={
                **headers,
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            }
        )
        completion_id, model = f"chatcmpl-{uuid.uuid4().hex}", self._settings.model_name
        created = int(time.time())
        try:
            await response.prepare(request)
            await response.write(
                sse_chunk(completion_id, model, created, {"role": "assistant", "content": ""})
            )
            seen = 0
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 and not turn.done:
                    await response.write(sse_error("the turn did not complete in time", "timeout"))
                    break
                changed = await _wait(turn, seen, min(self._settings.keepalive_s, remaining))
                if len(turn.streamed) > seen:
                    delta = {"content": turn.streamed[seen:]}
                    seen = len(turn.streamed)
                    await response.write(sse_chunk(completion_id, model, created, delta))
                if turn.done:
                    if turn.ok:
                        await response.write(sse_chunk(completion_id, model, created, {}, "stop"))
                    else:
                        await response.write(sse_error(self._failure_message(turn)))
                    break
                if not changed:
                    await response.write(b": keep-alive\n\n")
            await response.write(sse_done())
            await response.write_eof()
        except ConnectionError:
            self._ctx.logger.info("api_client_left_stream", event_id=turn.event_id)
        return response


async def _wait(turn: Turn, seen: int, seconds: float) -> bool:
    """Wait for a change of `turn` for at most `seconds`; False when nothing changed."""
    try:
        async with asyncio.timeout(max(seconds, 0.0)):
            await turn.wait_change(seen)
    except TimeoutError:
        return False
    return True


def _unauthorized() -> web.Response:
    return _json_error(401, "invalid or missing API key", code="invalid_api_key")


def _bounded(value: str | None, what: str) -> str | None:
    if value is None or not value.strip():
        return None
    if len(value) > _MAX_ID_LEN:
        raise RequestError(f"the {what} is longer than {_MAX_ID_LEN} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise RequestError(f"the {what} must not contain control characters")
    return value.strip()


def _header_value(value: str) -> str:
    """`value` as is when it is printable ASCII, else percent-encoded (UTF-8)."""
    if value.isascii() and value.isprintable():
        return value
    return quote(value, safe="")
