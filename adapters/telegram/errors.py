"""Map python-telegram-bot exceptions to `SendResult` failures.

Telegram's error descriptions are matched case-insensitively: PTB rewrites their
capitalisation ("Bad Request: chat not found" arrives as "Chat not found").
"""

from __future__ import annotations

import datetime as dt
import warnings

from telegram import error as tg_error

from gateway.events import ErrorKind, SendResult
from hermes_common.redact import redact

__all__ = ["classify", "error_text", "retry_after_of", "retry_after_seconds"]

_MAX_ERROR_CHARS = 300

_BAD_REQUEST_RULES: tuple[tuple[tuple[str, ...], ErrorKind], ...] = (
    (("message is not modified",), ErrorKind.NOT_MODIFIED),
    (("can't parse entities", "can't find end", "unsupported start tag", "can't parse"),
     ErrorKind.BAD_FORMAT),
    (("too long", "message_too_long"), ErrorKind.TOO_LONG),
    (("thread not found", "topic_closed", "topic closed", "topic_deleted"), ErrorKind.UNKNOWN),
    (("chat not found", "user not found", "peer_id_invalid", "group chat was deactivated",
      "message to edit not found", "message to delete not found", "message_id_invalid"),
     ErrorKind.NOT_FOUND),
    (("not enough rights", "have no rights", "chat_write_forbidden"), ErrorKind.FORBIDDEN),
)


def retry_after_seconds(value: float | dt.timedelta | None) -> float:
    """`RetryAfter.retry_after` is seconds or a timedelta depending on the PTB version."""
    if value is None:
        return 1.0
    if isinstance(value, dt.timedelta):
        return max(value.total_seconds(), 0.0)
    return max(float(value), 0.0)


def retry_after_of(exc: tg_error.RetryAfter) -> float:
    """Seconds to wait, read without PTB's int-vs-timedelta deprecation warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return retry_after_seconds(exc.retry_after)


def error_text(exc: BaseException, token: str) -> str:
    """`Type: message` of `exc`, redacted (`hermes_common.redact`, the bot `token` included)
    and capped at 300 characters: safe for logs, errors and chats."""
    text = redact(f"{type(exc).__name__}: {exc}", (token,) if token else ())
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 1] + "…"


def classify(exc: BaseException, *, secret: str = "") -> SendResult:
    """The failure `SendResult` for an exception raised by a Bot API call. Must not raise."""
    message = error_text(exc, secret)
    if isinstance(exc, tg_error.RetryAfter):
        return SendResult.failure(ErrorKind.RATE_LIMITED, message,
                                  retry_after=retry_after_of(exc))
    if isinstance(exc, tg_error.TimedOut):
        return SendResult.failure(ErrorKind.TIMEOUT, message)
    if isinstance(exc, tg_error.Forbidden):
        return SendResult.failure(ErrorKind.FORBIDDEN, message)
    if isinstance(exc, tg_error.ChatMigrated):
        return SendResult.failure(ErrorKind.NOT_FOUND, message)
    if isinstance(exc, tg_error.BadRequest):
        lowered = str(exc).lower()
        for needles, kind in _BAD_REQUEST_RULES:
            if any(n in lowered for n in needles):
                return SendResult.failure(kind, message)
        return SendResult.failure(ErrorKind.UNKNOWN, message)
    if isinstance(exc, tg_error.InvalidToken | tg_error.Conflict):
        return SendResult.failure(ErrorKind.UNKNOWN, message)
    if isinstance(exc, tg_error.NetworkError):
        return SendResult.failure(ErrorKind.TRANSIENT, message)
    return SendResult.failure(ErrorKind.UNKNOWN, message)
