"""Slack Web API failures → `SendResult` error kinds and adapter errors."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError

from gateway.events import ErrorKind, SendResult

__all__ = ["AUTH_ERRORS", "api_error_code", "failure_for", "retry_after_of"]

#: Error codes meaning the token itself is refused: fatal at start.
AUTH_ERRORS = frozenset({
    "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
    "no_permission", "not_allowed_token_type", "missing_scope", "team_access_not_granted",
})

_KINDS: dict[str, ErrorKind] = {
    "channel_not_found": ErrorKind.NOT_FOUND,
    "message_not_found": ErrorKind.NOT_FOUND,
    "thread_not_found": ErrorKind.NOT_FOUND,
    "user_not_found": ErrorKind.NOT_FOUND,
    "not_in_channel": ErrorKind.FORBIDDEN,
    "is_archived": ErrorKind.FORBIDDEN,
    "restricted_action": ErrorKind.FORBIDDEN,
    "restricted_action_read_only_channel": ErrorKind.FORBIDDEN,
    "restricted_action_thread_only_channel": ErrorKind.FORBIDDEN,
    "cannot_dm_bot": ErrorKind.FORBIDDEN,
    "user_disabled": ErrorKind.FORBIDDEN,
    "cant_update_message": ErrorKind.FORBIDDEN,
    "cant_delete_message": ErrorKind.FORBIDDEN,
    "edit_window_closed": ErrorKind.FORBIDDEN,
    "msg_too_long": ErrorKind.TOO_LONG,
    "msg_blocks_too_long": ErrorKind.TOO_LONG,
    "no_text": ErrorKind.BAD_FORMAT,
    "invalid_blocks": ErrorKind.BAD_FORMAT,
    "invalid_blocks_format": ErrorKind.BAD_FORMAT,
    "invalid_attachments": ErrorKind.BAD_FORMAT,
    "ratelimited": ErrorKind.RATE_LIMITED,
    "rate_limited": ErrorKind.RATE_LIMITED,
    "service_unavailable": ErrorKind.TRANSIENT,
    "fatal_error": ErrorKind.TRANSIENT,
    "internal_error": ErrorKind.TRANSIENT,
    "request_timeout": ErrorKind.TIMEOUT,
}


def api_error_code(exc: SlackApiError) -> str:
    data: Any = getattr(exc.response, "data", None)
    if isinstance(data, dict):
        return str(data.get("error") or "")
    return ""


def retry_after_of(exc: SlackApiError, default: float = 1.0) -> float:
    headers = getattr(exc.response, "headers", None) or {}
    for key in ("Retry-After", "retry-after"):
        raw = headers.get(key) if hasattr(headers, "get") else None
        if raw is not None:
            try:
                return max(0.0, float(raw[0] if isinstance(raw, list) else raw))
            except (TypeError, ValueError):
                break
    return default


def failure_for(exc: BaseException) -> SendResult:
    """Map an exception from a Web API call to a failed `SendResult`. Must not raise."""
    if isinstance(exc, SlackApiError):
        code = api_error_code(exc)
        status = getattr(exc.response, "status_code", 200)
        if status == 429 or code in ("ratelimited", "rate_limited"):
            return SendResult.failure(ErrorKind.RATE_LIMITED, code or "ratelimited",
                                      retry_after=retry_after_of(exc))
        kind = _KINDS.get(code)
        if kind is None:
            kind = ErrorKind.TRANSIENT if isinstance(status, int) and status >= 500 else (
                ErrorKind.UNKNOWN)
        return SendResult.failure(kind, code or f"http {status}")
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return SendResult.failure(ErrorKind.TIMEOUT, "slack request timed out")
    if isinstance(exc, aiohttp.ClientError | SlackClientError | OSError):
        return SendResult.failure(ErrorKind.TRANSIENT, type(exc).__name__)
    return SendResult.failure(ErrorKind.UNKNOWN, type(exc).__name__)
