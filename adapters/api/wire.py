"""OpenAI-compatible wire shapes: request parsing, completion bodies, SSE chunks, errors."""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ChatRequest",
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


@dataclass(frozen=True, slots=True)
class ChatRequest:
    text: str
    stream: bool
    user: str | None
    #: Decoded `image_url` parts of the newest user message (data: URLs only).
    images: tuple[bytes, ...] = ()


MAX_IMAGES = 8


def _content_images(content: Any, max_bytes: int) -> tuple[bytes, ...]:
    """The bytes of each `image_url` part. Only `data:` URLs are taken: the gateway never
    fetches a URL a client names. Raises `RequestError`."""
    if not isinstance(content, list):
        return ()
    found: list[bytes] = []
    for part in content:
        if not isinstance(part, Mapping) or part.get("type") != "image_url":
            continue
        ref = part.get("image_url")
        url = ref.get("url") if isinstance(ref, Mapping) else ref
        if not isinstance(url, str) or not url.startswith("data:"):
            raise RequestError("image_url parts must be data: URLs (base64); the gateway does "
                               "not fetch images by URL", param="messages")
        head, _, payload = url.partition(",")
        if not head.endswith(";base64"):
            raise RequestError("image_url data: URLs must be base64-encoded", param="messages")
        if len(payload) * 3 // 4 > max_bytes:
            raise RequestError(f"an image is larger than {max_bytes} bytes", param="messages")
        try:
            found.append(base64.b64decode(payload, validate=True))
        except (binascii.Error, ValueError):
            raise RequestError("an image_url part is not valid base64",
                               param="messages") from None
        if len(found) > MAX_IMAGES:
            raise RequestError(f"at most {MAX_IMAGES} images per message", param="messages")
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


def parse_chat_request(body: Any, *, max_image_bytes: int = 20 * 1024 * 1024) -> ChatRequest:
    """Take only the newest user message's text from a chat-completions body.

    Raises `RequestError` when the body is not an object, has no user message, or the newest
    user message carries no text.
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
    images = _content_images(newest.get("content"), max_image_bytes)
    if not text.strip() and not images:
        raise RequestError(
            "the newest user message has no text or image content",
            param="messages",
        )
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise RequestError("'user' must be a string", param="user")
    return ChatRequest(text=text, stream=body.get("stream") is True, user=user or None,
                       images=images)


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
