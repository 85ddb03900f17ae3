"""Provider error classification: every failure of a model call becomes one `ClassifiedError`.

All string matching on provider errors lives here. The turn loop reads only the recovery flags:

- `should_compress`: the request is too big; the caller must compress the history, then retry.
- `should_rotate_credential`: this key is spent (rate limited, out of credit, rejected); mark it
  in the credential pool and use another key of the same provider.
- `retryable`: the same request may succeed if sent again after a backoff.
- `should_fallback`: when retries on this provider are not possible (or are used up), move on to
  the next provider in fallback order.

`classify()` never raises. Messages are redacted (`hermes_common.redact`) and capped at 500
characters, so a `ClassifiedError` may be shown to users and written to logs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from enum import StrEnum
from typing import Any

from hermes_common.redact import redact

__all__ = ["ClassifiedError", "FailoverReason", "classify"]


class FailoverReason(StrEnum):
    AUTH = "auth"
    AUTH_PERMANENT = "auth_permanent"
    BILLING = "billing"
    RATE_LIMIT = "rate_limit"
    UPSTREAM_RATE_LIMIT = "upstream_rate_limit"
    OVERLOADED = "overloaded"
    SERVER_ERROR = "server_error"
    TIMEOUT = "timeout"
    CONTEXT_OVERFLOW = "context_overflow"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    MODEL_NOT_FOUND = "model_not_found"
    CONTENT_POLICY_BLOCKED = "content_policy_blocked"
    FORMAT_ERROR = "format_error"
    SSL_ERROR = "ssl_error"
    STREAM_UNSUPPORTED = "stream_unsupported"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class ClassifiedError:
    """What went wrong with a model call and what the loop should do about it."""

    reason: FailoverReason
    message: str
    status_code: int | None = None
    code: str | None = None
    retryable: bool = True
    should_compress: bool = False
    should_rotate_credential: bool = False
    should_fallback: bool = False
    retry_after: float | None = None
    provider: str | None = None
    context: dict[str, Any] = field(default_factory=dict)

    @property
    def is_auth(self) -> bool:
        return self.reason in (FailoverReason.AUTH, FailoverReason.AUTH_PERMANENT)


_POLICY = (
    "violates our usage policies", "violates openai's usage policies", "content_filter",
    "content management policy", "flagged by our safety", "your request was flagged",
    "responses cannot be generated due to safety", "responsibleaipolicyviolation",
    "flagged for possible cybersecurity risk", "content policy",
)
_CONTEXT = (
    "context_length_exceeded", "context length", "maximum context", "context window",
    "too many tokens", "token limit", "reduce the length", "prompt is too long",
    "input is too long", "max_model_len", "exceeds the limit", "n_ctx_slot", "slot context",
    "超过最大长度", "上下文长度",
)
_BILLING = (
    "insufficient_quota", "insufficient quota", "insufficient credits", "insufficient balance",
    "credit balance", "credits exhausted", "payment required", "billing hard limit",
    "exceeded your current quota", "account is deactivated", "billing_not_active",
)
_BILLING_CODES = frozenset({
    "insufficient_quota", "billing_not_active", "payment_required", "insufficient_credits",
    "no_usable_credits", "balance_depleted",
})
_RATE = ("rate limit", "rate_limit", "too many requests", "requests per min", "tokens per min")
_OVERLOADED = ("overloaded", "server is busy", "capacity", "temporarily unavailable")
_REVOKED = ("revoked", "token_invalidated", "deactivated", "disabled api key", "key is disabled")
_AUTH_TEXT = ("invalid api key", "incorrect api key", "unauthorized", "authentication")
_MODEL_MISSING = ("model_not_found", "does not exist", "unknown model", "no such model",
                  "model not found", "invalid model")
_STREAM_UNSUPPORTED = ("stream is not supported", "streaming is not supported",
                       "stream not supported", "does not support stream", "unsupported: stream",
                       "'stream' is not supported")
_SSL = ("certificate verify failed", "certificate_verify_failed", "self-signed certificate",
        "self signed certificate", "certificate has expired", "unable to get local issuer")
_TRANSPORT_TYPES = frozenset({
    "ReadTimeout", "ConnectTimeout", "PoolTimeout", "ConnectError", "RemoteProtocolError",
    "ReadError", "WriteError", "ServerDisconnectedError", "APIConnectionError",
    "APITimeoutError", "TimeoutError", "ConnectionError", "ConnectionResetError",
    "ConnectionAbortedError", "BrokenPipeError", "IncompleteRead",
})


def _any(text: str, phrases: tuple[str, ...]) -> bool:
    return any(p in text for p in phrases)


def _walk(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(chain) < 6 and cur not in chain:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    return chain


def _status(chain: list[BaseException]) -> int | None:
    for e in chain:
        for attr in ("status_code", "status"):
            val = getattr(e, attr, None)
            if isinstance(val, int) and 100 <= val <= 599:
                return val
    return None


def _body(chain: list[BaseException]) -> dict[str, Any]:
    for e in chain:
        body = getattr(e, "body", None)
        if isinstance(body, dict):
            inner = body.get("error")
            return inner if isinstance(inner, dict) else body
    return {}


def _headers(chain: list[BaseException]) -> Any:
    for e in chain:
        resp = getattr(e, "response", None)
        headers = getattr(resp, "headers", None)
        if headers is not None:
            return headers
    return None


def _parse_retry_after(headers: Any, message: str) -> float | None:
    if headers is not None:
        try:
            ms = headers.get("retry-after-ms")
            if ms:
                return max(0.0, float(ms) / 1000.0)
            raw = headers.get("retry-after")
            if raw:
                try:
                    return max(0.0, float(raw))
                except ValueError:
                    from datetime import UTC, datetime

                    when = parsedate_to_datetime(raw)
                    return max(0.0, (when - datetime.now(UTC)).total_seconds())
        except (TypeError, ValueError, AttributeError):
            pass
    m = re.search(r"(?:try again|retry) (?:in|after) (\d+(?:\.\d+)?)\s*(ms|s|sec|seconds?)\b", message)
    if m:
        val = float(m.group(1))
        return val / 1000.0 if m.group(2) == "ms" else val
    return None


def _code(body: dict[str, Any]) -> str | None:
    for key in ("code", "type"):
        val = body.get(key)
        if isinstance(val, str | int) and str(val) and str(val) != "400":
            return str(val)
    msg = body.get("message")
    if isinstance(msg, str) and msg.lstrip().startswith("{"):
        try:
            nested = json.loads(msg)
        except ValueError:
            return None
        if isinstance(nested, dict):
            return _code(nested.get("error", nested) if isinstance(nested.get("error"), dict) else nested)
    return None


def classify(
    exc: BaseException,
    *,
    provider: str | None = None,
    approx_tokens: int = 0,
    context_length: int = 128_000,
    secrets: tuple[str, ...] = (),
) -> ClassifiedError:
    """Map any exception from a model call to a `ClassifiedError`. Must not raise.

    `secrets` are redacted from the message in addition to anything key-shaped.
    `approx_tokens` / `context_length` decide whether a bare disconnect on a huge request is
    more likely a context overflow than a network problem.
    """
    try:
        return _classify(exc, provider, approx_tokens, context_length, secrets)
    except Exception:  # noqa: BLE001 - the classifier itself must never fail a turn
        return ClassifiedError(FailoverReason.UNKNOWN, type(exc).__name__, provider=provider)


def _classify(
    exc: BaseException, provider: str | None, approx: int, ctx_len: int, secrets: tuple[str, ...]
) -> ClassifiedError:
    chain = _walk(exc)
    status = _status(chain)
    if status is None and type(exc).__name__ == "RateLimitError":
        status = 429
    body = _body(chain)
    code = _code(body)
    body_msg: str = body["message"] if isinstance(body.get("message"), str) else ""
    raw = f"{exc} {body_msg}".strip() or type(exc).__name__
    text = raw.lower()
    lc_code = (code or "").lower()
    retry_after = _parse_retry_after(_headers(chain), text)
    message = redact(raw, secrets)[:500]

    def make(reason: FailoverReason, retry: bool, compress: bool = False, rotate: bool = False,
             fallback: bool = False) -> ClassifiedError:
        return ClassifiedError(
            reason, message, status, code, retry, compress, rotate, fallback,
            retry_after, provider,
        )

    R = FailoverReason
    if _any(text, _POLICY) or lc_code == "content_filter":
        return make(R.CONTENT_POLICY_BLOCKED, False, fallback=True)
    if status == 400 and (_any(text, _STREAM_UNSUPPORTED)):
        return make(R.STREAM_UNSUPPORTED, True)
    if status == 401:
        revoked = _any(text, _REVOKED) or lc_code in ("token_revoked", "token_invalidated")
        return make(R.AUTH_PERMANENT if revoked else R.AUTH, False, rotate=True, fallback=True)
    if status == 403:
        if _any(text, _BILLING) or "spending limit" in text:
            return make(R.BILLING, False, rotate=True, fallback=True)
        return make(R.AUTH, False, fallback=True)
    if status == 402:
        if "usage limit" in text and ("try again" in text or "resets" in text):
            return make(R.RATE_LIMIT, True, rotate=True, fallback=True)
        return make(R.BILLING, False, rotate=True, fallback=True)
    if status == 404:
        if _any(text, _BILLING):
            return make(R.BILLING, False, rotate=True, fallback=True)
        return make(R.MODEL_NOT_FOUND, False, fallback=True)
    if status == 413:
        return make(R.PAYLOAD_TOO_LARGE, True, compress=True)
    if status == 429:
        if lc_code in _BILLING_CODES or _any(text, _BILLING):
            return make(R.BILLING, False, rotate=True, fallback=True)
        if _any(text, _OVERLOADED) and not _any(text, _RATE):
            return make(R.OVERLOADED, True, fallback=True)
        if "provider returned error" in text and provider and "openrouter" in provider:
            return make(R.UPSTREAM_RATE_LIMIT, True, fallback=True)
        return make(R.RATE_LIMIT, True, rotate=True, fallback=True)
    if status == 400 or status == 422:
        if lc_code in ("context_length_exceeded", "max_tokens_exceeded") or _any(text, _CONTEXT):
            return make(R.CONTEXT_OVERFLOW, True, compress=True)
        if lc_code in ("model_not_found", "invalid_model") or _any(text, _MODEL_MISSING):
            return make(R.MODEL_NOT_FOUND, False, fallback=True)
        if _any(text, _BILLING):
            return make(R.BILLING, False, rotate=True, fallback=True)
        if _any(text, _RATE):
            return make(R.RATE_LIMIT, True, rotate=True, fallback=True)
        if len(body_msg) < 30 and (approx > 0.4 * ctx_len):
            return make(R.CONTEXT_OVERFLOW, True, compress=True)
        return make(R.FORMAT_ERROR, False, fallback=True)
    if status == 408:
        return make(R.TIMEOUT, True, fallback=True)
    if status is not None and status >= 500:
        if _any(text, _CONTEXT):
            return make(R.CONTEXT_OVERFLOW, True, compress=True)
        if status in (503, 529) or _any(text, _OVERLOADED):
            return make(R.OVERLOADED, True, fallback=True)
        return make(R.SERVER_ERROR, True, fallback=True)
    if status is not None and 400 <= status < 500:
        return make(R.FORMAT_ERROR, False, fallback=True)
    # No HTTP status: in-stream errors, transport failures, local bugs.
    if lc_code in _BILLING_CODES or _any(text, _BILLING):
        return make(R.BILLING, False, rotate=True, fallback=True)
    if lc_code in ("context_length_exceeded", "max_tokens_exceeded") or _any(text, _CONTEXT):
        return make(R.CONTEXT_OVERFLOW, True, compress=True)
    if lc_code in ("rate_limit_exceeded",) or _any(text, _RATE):
        return make(R.RATE_LIMIT, True, rotate=True, fallback=True)
    if lc_code == "invalid_api_key" or _any(text, _AUTH_TEXT):
        return make(R.AUTH, False, rotate=True, fallback=True)
    if _any(text, _OVERLOADED):
        return make(R.OVERLOADED, True, fallback=True)
    if _any(text, _SSL):
        return make(R.SSL_ERROR, False, fallback=True)
    names = {type(e).__name__ for e in chain}
    if names & _TRANSPORT_TYPES or any(isinstance(e, TimeoutError | ConnectionError) for e in chain):
        if approx > 0.6 * ctx_len:
            return make(R.CONTEXT_OVERFLOW, True, compress=True)
        return make(R.TIMEOUT, True, fallback=True)
    if type(exc).__name__ == "APIError" or "server_error" in lc_code:
        return make(R.SERVER_ERROR, True, fallback=True)
    return make(R.UNKNOWN, True)
