"""OpenAI-compatible wire shapes: request parsing, completion bodies, SSE chunks, errors."""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "ChatRequest",
    "MediaLimits",
    "MediaPart",
    "RequestError",
    "completion_body",
    "error_body",
    "models_body",
    "parse_chat_request",
    "sse_chunk",
    "sse_done",
    "sse_error",
]


class RequestError(ValueError):
    """A client mistake, answered with 400 and `message`."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


MediaKind = Literal["image", "audio", "document"]


@dataclass(frozen=True, slots=True)
class MediaPart:
    """One decoded media part of the newest user message."""

    kind: MediaKind
    data: bytes
    name: str


@dataclass(frozen=True, slots=True)
class ChatRequest:
    text: str
    stream: bool
    user: str | None
    #: Decoded `image_url`, `input_audio` and `file` parts of the newest user message, in
    #: order (base64 data only: the gateway never fetches a URL a client names).
    media: tuple[MediaPart, ...] = ()


@dataclass(frozen=True, slots=True)
class MediaLimits:
    part_bytes: int = 20 * 1024 * 1024
    total_bytes: int = 50 * 1024 * 1024
    images: int = 4


_AUDIO_FORMATS = frozenset({"wav", "mp3", "ogg", "flac", "m4a", "webm", "opus"})
_SUPPORTED = "text, image_url, input_audio, file"


def _decode(payload: str, what: str, limits: MediaLimits) -> bytes:
    if len(payload) * 3 // 4 > limits.part_bytes:
        raise RequestError(f"{what} is larger than {limits.part_bytes} bytes", param="messages")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise RequestError(f"{what} is not valid base64", param="messages") from None


def _data_url(url: object, what: str) -> str:
    """The base64 payload of a `data:` URL. Raises `RequestError`."""
    if not isinstance(url, str) or not url.startswith("data:"):
        raise RequestError(f"{what}: only base64 data: URLs are accepted; the gateway does "
                           "not fetch files by URL", param="messages")
    head, _, payload = url.partition(",")
    if not head.endswith(";base64"):
        raise RequestError(f"{what}: data: URLs must be base64-encoded", param="messages")
    return payload


def _image(part: Mapping[str, Any], limits: MediaLimits, n: int) -> MediaPart:
    ref = part.get("image_url")
    url = ref.get("url") if isinstance(ref, Mapping) else ref
    payload = _data_url(url, "image_url parts")
    return MediaPart("image", _decode(payload, "an image_url part", limits), f"image{n}")


def _audio(part: Mapping[str, Any], limits: MediaLimits, n: int) -> MediaPart:
    ref = part.get("input_audio")
    data = ref.get("data") if isinstance(ref, Mapping) else None
    fmt = ref.get("format") if isinstance(ref, Mapping) else None
    if not isinstance(data, str) or not data:
        raise RequestError("an input_audio part needs input_audio.data (base64)",
                           param="messages")
    fmt = fmt.lower() if isinstance(fmt, str) and fmt.lower() in _AUDIO_FORMATS else "audio"
    return MediaPart("audio", _decode(data, "an input_audio part", limits), f"audio{n}.{fmt}")


def _file(part: Mapping[str, Any], limits: MediaLimits, n: int) -> MediaPart:
    ref = part.get("file")
    if not isinstance(ref, Mapping):
        raise RequestError("a file part needs a file object", param="messages")
    data = ref.get("file_data")
    if not isinstance(data, str) or not data:
        if ref.get("file_id"):
            raise RequestError("file parts must carry file_data (base64); file_id is not "
                               "supported (this gateway has no files API)", param="messages")
        raise RequestError("a file part needs file.file_data (base64)", param="messages")
    payload = _data_url(data, "file_data") if data.startswith("data:") else data
    raw_name = ref.get("filename")
    name = raw_name.strip()[-120:] if isinstance(raw_name, str) and raw_name.strip() else f"file{n}"
    return MediaPart("document", _decode(payload, "a file part", limits), name)


def _content_media(content: Any, limits: MediaLimits) -> tuple[MediaPart, ...]:
    """The decoded media parts of a message's content, in order. Raises `RequestError` for
    a part type we do not read, a part that is not base64 data, or one over the limits."""
    if not isinstance(content, list):
        return ()
    found: list[MediaPart] = []
    total = images = 0
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            continue
        if not isinstance(part, Mapping) or kind not in ("image_url", "input_audio", "file"):
            raise RequestError(f"content part type {kind!r} is not supported (supported: "
                               f"{_SUPPORTED})", param="messages")
        n = len(found) + 1
        got = (_image(part, limits, n) if kind == "image_url" else
               _audio(part, limits, n) if kind == "input_audio" else _file(part, limits, n))
        images += got.kind == "image"
        if images > limits.images:
            raise RequestError(f"at most {limits.images} images per message", param="messages")
        total += len(got.data)
        if total > limits.total_bytes:
            raise RequestError(f"the message's images, audio and files are larger than "
                               f"{limits.total_bytes} bytes together", param="messages")
        found.append(got)
    return tuple(found)


def error_body(
    message: str,
    *,
    type_: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p["text"]
            for p in content
            if isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str)
        ]
        return "\n".join(parts)
    return ""


def parse_chat_request(body: Any, *, limits: MediaLimits = MediaLimits()) -> ChatRequest:
    """Take only the newest user message's text and media from a chat-completions body.

    Raises `RequestError` when the body is not an object, has no user message, the newest
    user message carries neither text nor media, or its media break `limits`.
    """
    if not isinstance(body, Mapping):
        raise RequestError("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise RequestError("'messages' must be a list of chat messages", param="messages")
    newest = next(
        (m for m in reversed(messages) if isinstance(m, Mapping) and m.get("role") == "user"),
        None,
    )
    if newest is None:
        raise RequestError("'messages' contains no user message", param="messages")
    text = _content_text(newest.get("content"))
    media = _content_media(newest.get("content"), limits)
    if not text.strip() and not media:
        raise RequestError(
            "the newest user message has no text, image, audio or file content",
            param="messages",
        )
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise RequestError("'user' must be a string", param="user")
    return ChatRequest(text=text, stream=body.get("stream") is True, user=user or None,
                       media=media)


def completion_body(completion_id: str, model: str, text: str) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def models_body(model: str) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"id": model, "object": "model", "created": 0, "owned_by": "hermes"}],
    }


def _sse(payload: Mapping[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"


def sse_chunk(
    completion_id: str,
    model: str,
    created: int,
    delta: Mapping[str, Any],
    finish_reason: str | None = None,
) -> bytes:
    return _sse(
        {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": dict(delta), "finish_reason": finish_reason}],
        }
    )


def sse_error(message: str, type_: str = "server_error") -> bytes:
    return _sse(error_body(message, type_=type_))


def sse_done() -> bytes:
    return b"data: [DONE]\n\n"
