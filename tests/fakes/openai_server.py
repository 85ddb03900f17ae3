"""A fake OpenAI-compatible server (aiohttp, 127.0.0.1, random port) for tests, benchmarks, demos.

    async with FakeOpenAIServer() as server:
        server.enqueue(text("Hello there"), tool_calls(call("read_file", {"path": "a"})))
        client = AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        ...
        server.requests[0].api_key, server.requests[0].body["messages"]

Each `/v1/chat/completions` request takes the next script from the queue; when the queue is
empty it asks `responder(request)` (default: echo the last user message). Scripts: `Reply`
(text, tool calls, reasoning; JSON or SSE with fragments and a usage chunk; optional per-chunk
delay), `ErrorReply` (status, OpenAI-style error body, headers such as Retry-After), `Hang`
(answers only after a long time or when the server stops), `StreamError` (an error event in
the middle of a stream) and `Cut` (a stream whose connection drops mid-way, no error event).
Every request is recorded with headers, JSON body and timestamps. `/v1/audio/transcriptions`
(`transcriptions`, `stt_queue`) and `/v1/audio/speech` (`speeches`, `tts_queue`; real OGG/Opus
by default) answer speech requests.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import BodyPartReader, web

from tests.fakes.audio import voice_reply

__all__ = [
    "Cut",
    "ErrorReply",
    "FakeOpenAIServer",
    "Hang",
    "RecordedRequest",
    "Reply",
    "Script",
    "Speech",
    "StreamError",
    "ToolCallSpec",
    "call",
    "content_policy",
    "context_overflow",
    "echo_responder",
    "error",
    "hang",
    "insufficient_quota",
    "invalid_api_key",
    "payment_required",
    "rate_limited",
    "server_error",
    "stream_error",
    "text",
    "tool_calls",
]


@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    name: str
    arguments: str
    id: str


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful completion. `chunk_chars` splits the text into pieces of that many chars
    (default: one piece per word); `delay_s` is slept before each chunk."""

    text: str = ""
    calls: tuple[ToolCallSpec, ...] = ()
    reasoning: str = ""
    chunk_chars: int | None = None
    delay_s: float = 0.0
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ErrorReply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Hang:
    """Answer nothing for `seconds` (or until the server stops), then a short text."""

    seconds: float = 3600.0
    then: Reply = Reply("late reply")


@dataclass(frozen=True, slots=True)
class StreamError:
    """Stream `text_before` (word chunks), then an in-stream `{"error": ...}` event."""

    text_before: str = ""
    message: str = "The server had an error while processing your request."
    type: str = "server_error"
    code: str | None = None


@dataclass(frozen=True, slots=True)
class Cut:
    """Stream `text_before` (word chunks), then drop the connection: no error event, no
    `[DONE]` (a proxy or the provider dying mid-stream). Not streamed: the connection drops
    before any answer."""

    text_before: str = ""


Script = Reply | ErrorReply | Hang | StreamError | Cut
Responder = Callable[["RecordedRequest"], "Script | Awaitable[Script] | None"]


def call(name: str, arguments: dict[str, Any] | str | None = None, id: str | None = None) -> ToolCallSpec:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ToolCallSpec(name, args, id or f"call_{uuid.uuid4().hex[:20]}")


def text(content: str, **kw: Any) -> Reply:
    return Reply(text=content, **kw)


def tool_calls(*calls: ToolCallSpec, content: str = "", **kw: Any) -> Reply:
    return Reply(text=content, calls=tuple(calls), **kw)


def error(status: int, message: str, *, type: str | None = None, code: str | int | None = None,
          param: str | None = None, headers: dict[str, str] | None = None) -> ErrorReply:
    body = {"error": {"message": message, "type": type, "param": param, "code": code}}
    return ErrorReply(status, body, dict(headers or {}))


def rate_limited(retry_after: float | None = 0) -> ErrorReply:
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    return error(429, "Rate limit reached for fake-model in organization org-fake on requests per "
                 "min (RPM): Limit 3, Used 3, Requested 1.", type="requests",
                 code="rate_limit_exceeded", headers=headers)


def insufficient_quota() -> ErrorReply:
    return error(429, "You exceeded your current quota, please check your plan and billing "
                 "details.", type="insufficient_quota", code="insufficient_quota")


def payment_required() -> ErrorReply:
    return ErrorReply(402, {"error": {"message": "Insufficient credits. Add more credits to "
                                      "continue.", "code": 402}})


def invalid_api_key(revoked: bool = False) -> ErrorReply:
    msg = ("This API key has been revoked." if revoked
           else "Incorrect API key provided: sk-****. You can find your API key in your account.")
    return error(401, msg, type="invalid_request_error", code="invalid_api_key")


def context_overflow() -> ErrorReply:
    return error(400, "This model's maximum context length is 8192 tokens. However, your messages "
                 "resulted in 9100 tokens. Please reduce the length of the messages.",
                 type="invalid_request_error", param="messages", code="context_length_exceeded")


def server_error(status: int = 500) -> ErrorReply:
    return error(status, "The server had an error while processing your request. Sorry about that!",
                 type="server_error")


def content_policy() -> ErrorReply:
    return error(400, "Your request was flagged by our safety system as potentially violating "
                 "our usage policies.", type="invalid_request_error",
                 code="content_policy_violation")


def hang(seconds: float = 3600.0) -> Hang:
    return Hang(seconds)


def stream_error(text_before: str = "", message: str = "upstream connection lost") -> StreamError:
    return StreamError(text_before, message)


@dataclass(slots=True)
class Transcription:
    model: str
    filename: str
    content_type: str
    data: bytes
    api_key: str | None


@dataclass(slots=True)
class Speech:
    """One `/audio/speech` request."""

    model: str
    voice: str
    input: str
    response_format: str | None
    api_key: str | None


@dataclass(slots=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float
    finished_at: float | None = None
    raw: bytes = b""
    """The request body exactly as received."""

    @property
    def api_key(self) -> str | None:
        auth = self.headers.get("Authorization", "")
        return auth[7:] if auth.startswith("Bearer ") else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])

    @property
    def stream(self) -> bool:
        return bool((self.body or {}).get("stream"))


def _last_user_text(req: RecordedRequest) -> str:
    for msg in reversed(req.messages):
        if msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, list):
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def echo_responder(req: RecordedRequest) -> Script:
    return Reply(text=f"echo: {_last_user_text(req)}")


def _words(text_: str, size: int | None) -> list[str]:
    if not text_:
        return []
    if size:
        return [text_[i:i + size] for i in range(0, len(text_), size)]
    pieces, cur = [], ""
    for ch in text_:
        cur += ch
        if ch == " ":
            pieces.append(cur)
            cur = ""
    if cur:
        pieces.append(cur)
    return pieces


class FakeOpenAIServer:
    """Scriptable OpenAI-compatible endpoint. Use as an async context manager."""

    def __init__(
        self,
        *,
        model: str = "fake-model",
        responder: Responder | None = None,
        refuse_streaming: bool = False,
        cached_tokens: int = 0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.model = model
        self.responder: Responder = responder or echo_responder
        self.refuse_streaming = refuse_streaming
        self.cached_tokens = cached_tokens
        self.queue: deque[Script] = deque()
        self.requests: list[RecordedRequest] = []
        self.all_requests: list[RecordedRequest] = []
        #: `/audio/transcriptions` calls, and what they answer next (a text or an error).
        self.transcriptions: list[Transcription] = []
        self.stt_queue: deque[str | ErrorReply] = deque()
        #: `/audio/speech` calls, and what they answer next (audio bytes or an error; by
        #: default one second of real OGG/Opus, `tests.fakes.audio.voice_reply`).
        self.speeches: list[Speech] = []
        self.tts_queue: deque[bytes | ErrorReply | Hang] = deque()
        self._host, self._port = host, port
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()
        self.port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    def enqueue(self, *scripts: Script) -> None:
        self.queue.extend(scripts)

    def keys_used(self) -> list[str | None]:
        return [r.api_key for r in self.requests]

    async def start(self) -> FakeOpenAIServer:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        app.router.add_post("/v1/audio/speech", self._speech)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        server = site._server  # aiohttp exposes no public accessor for the bound port
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAIServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- handlers --------------------------------------------------------------------------

    async def _models(self, request: web.Request) -> web.Response:
        self.all_requests.append(RecordedRequest("GET", request.path, dict(request.headers), None,
                                                 time.monotonic(), time.monotonic()))
        return web.json_response({"object": "list", "data": [
            {"id": self.model, "object": "model", "created": 0, "owned_by": "fake"}]})

    async def _transcribe(self, request: web.Request) -> web.Response:
        fields: dict[str, str] = {}
        file_name, file_type, data = "", "", b""
        async for part in await request.multipart():
            if not isinstance(part, BodyPartReader):
                continue
            if part.filename is not None:
                file_name, file_type = part.filename, part.headers.get("Content-Type", "")
                data = await part.read()
            elif part.name:
                fields[part.name] = await part.text()
        auth = request.headers.get("Authorization", "")
        self.transcriptions.append(Transcription(
            fields.get("model", ""), file_name, file_type, bytes(data),
            auth[7:] if auth.startswith("Bearer ") else None))
        answer = self.stt_queue.popleft() if self.stt_queue else f"fake transcript of {file_name}"
        if isinstance(answer, ErrorReply):
            return web.json_response(answer.body, status=answer.status, headers=answer.headers)
        return web.json_response({"text": answer})

    async def _speech(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or not body.get("input"):
            return web.json_response({"error": {"message": "'input' is a required property",
                                                "type": "invalid_request_error"}}, status=400)
        auth = request.headers.get("Authorization", "")
        self.speeches.append(Speech(str(body.get("model", "")), str(body.get("voice", "")),
                                    str(body["input"]), body.get("response_format"),
                                    auth[7:] if auth.startswith("Bearer ") else None))
        if self.tts_queue:
            answer = self.tts_queue.popleft()
        else:
            answer = await asyncio.to_thread(voice_reply)
        if isinstance(answer, Hang):
            try:
                await asyncio.wait_for(self._closing.wait(), timeout=answer.seconds)
            except TimeoutError:
                pass
            return web.Response(status=503)
        if isinstance(answer, ErrorReply):
            return web.json_response(answer.body, status=answer.status, headers=answer.headers)
        kind = "audio/ogg" if answer.startswith(b"OggS") else "application/octet-stream"
        return web.Response(body=answer, content_type=kind)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        rec = RecordedRequest("POST", request.path, dict(request.headers), body, time.monotonic(),
                              raw=raw)
        self.requests.append(rec)
        self.all_requests.append(rec)
        try:
            return await self._respond(request, rec)
        finally:
            rec.finished_at = time.monotonic()

    async def _next_script(self, rec: RecordedRequest) -> Script:
        if self.queue:
            return self.queue.popleft()
        script = self.responder(rec)
        if inspect.isawaitable(script):
            script = await script
        return script if script is not None else echo_responder(rec)

    async def _respond(self, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        if not isinstance(rec.body, dict) or not isinstance(rec.body.get("messages"), list):
            return web.json_response({"error": {"message": "'messages' is a required property",
                                                "type": "invalid_request_error", "param": None,
                                                "code": None}}, status=400)
        if rec.stream and self.refuse_streaming:
            return web.json_response({"error": {"message": "stream is not supported by this "
                                                "endpoint", "type": "invalid_request_error",
                                                "param": "stream", "code": None}}, status=400)
        script = await self._next_script(rec)
        if isinstance(script, Hang):
            try:
                await asyncio.wait_for(self._closing.wait(), timeout=script.seconds)
                return web.Response(status=503)
            except TimeoutError:
                script = script.then
        if isinstance(script, ErrorReply):
            return web.json_response(script.body, status=script.status, headers=script.headers)
        if isinstance(script, Cut) and not rec.stream:
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=500)
        if not rec.stream:
            if isinstance(script, StreamError):
                return web.json_response({"error": {"message": script.message,
                                                    "type": script.type}}, status=500)
            return web.json_response(self._completion(script, rec))
        return await self._stream(request, script, rec)

    def _usage(self, reply: Reply, rec: RecordedRequest) -> dict[str, Any]:
        if reply.usage is not None:
            return reply.usage
        prompt = max(1, len(json.dumps(rec.messages)) // 4)
        completion = max(1, (len(reply.text) + sum(len(c.arguments) for c in reply.calls)) // 4)
        reasoning = len(reply.reasoning) // 4
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion + reasoning,
            "total_tokens": prompt + completion + reasoning,
            "prompt_tokens_details": {"cached_tokens": min(self.cached_tokens, prompt)},
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        }

    def _completion(self, reply: Reply, rec: RecordedRequest) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        if reply.calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in reply.calls
            ]
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
            "created": int(time.time()), "model": self.model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": reply.finish_reason or ("tool_calls" if reply.calls else "stop")}],
            "usage": self._usage(reply, rec),
        }

    def _deltas(self, script: Reply | StreamError | Cut) -> Iterable[dict[str, Any]]:
        yield {"role": "assistant", "content": ""}
        if isinstance(script, StreamError | Cut):
            for piece in _words(script.text_before, None):
                yield {"content": piece}
            return
        for piece in _words(script.reasoning, script.chunk_chars):
            yield {"reasoning_content": piece}
        for piece in _words(script.text, script.chunk_chars):
            yield {"content": piece}
        for i, c in enumerate(script.calls):
            yield {"tool_calls": [{"index": i, "id": c.id, "type": "function",
                                   "function": {"name": c.name, "arguments": ""}}]}
            third = max(1, len(c.arguments) // 3)
            for j in range(0, len(c.arguments), third):
                yield {"tool_calls": [{"index": i, "function": {"arguments": c.arguments[j:j + third]}}]}

    async def _stream(self, request: web.Request, script: Reply | StreamError | Cut,
                      rec: RecordedRequest) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        try:
            await resp.prepare(request)
        except ConnectionResetError:
            return resp  # the client gave up (timed out) before the first byte
        cid, created = f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time())

        def chunk(delta: dict[str, Any] | None, finish: str | None = None,
                  usage: dict[str, Any] | None = None) -> bytes:
            choices = [] if delta is None else [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
            data: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created,
                                    "model": self.model, "choices": choices}
            if usage is not None:
                data["usage"] = usage
            return f"data: {json.dumps(data)}\n\n".encode()

        delay = script.delay_s if isinstance(script, Reply) else 0.0
        try:
            for delta in self._deltas(script):
                if delay:
                    await asyncio.sleep(delay)
                await resp.write(chunk(delta))
            if isinstance(script, Cut):
                if request.transport is not None:
                    request.transport.abort()
                return resp
            if isinstance(script, StreamError):
                err = {"error": {"message": script.message, "type": script.type, "code": script.code}}
                await resp.write(f"data: {json.dumps(err)}\n\n".encode())
                return resp
            finish = script.finish_reason or ("tool_calls" if script.calls else "stop")
            await resp.write(chunk({}, finish))
            if ((rec.body or {}).get("stream_options") or {}).get("include_usage"):
                await resp.write(chunk(None, usage=self._usage(script, rec)))
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
        except ConnectionResetError:
            pass  # the client went away (an interrupted stream): nothing left to send
        return resp


async def fake_openai_server(**kwargs: Any) -> FakeOpenAIServer:
    """Start a server (caller stops it). Convenience for scripts and the demo."""
    return await FakeOpenAIServer(**kwargs).start()
