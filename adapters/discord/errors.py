"""Map discord.py exceptions to `SendResult` failures."""

from __future__ import annotations

import aiohttp
import discord

from gateway.events import ErrorKind, SendResult
from hermes_common.redact import redact

__all__ = ["failure_from_exception"]

#: Discord JSON error codes that mean "you may not post here".
_FORBIDDEN_CODES = {50001, 50007, 50013, 50083, 40002}
#: "Unknown X" codes.
_NOT_FOUND_CODES = {10003, 10004, 10008, 10013}
_TOO_LONG_MARKERS = ("2000 or fewer", "BASE_TYPE_MAX_LENGTH", "too large", "too long")


def _retry_after(exc: discord.HTTPException) -> float | None:
    header = exc.response.headers.get("Retry-After") if exc.response is not None else None
    try:
        return float(header) if header is not None else None
    except ValueError:
        return None


def failure_from_exception(exc: BaseException) -> SendResult:
    """Classify `exc` (raised by a discord.py REST call). Must not raise.

    The error string carries the exception type, HTTP status and Discord's error code and
    message, never request headers (the token lives there), redacted.
    """
    if isinstance(exc, discord.RateLimited):
        return SendResult.failure(
            ErrorKind.RATE_LIMITED, "rate limited", retry_after=exc.retry_after
        )
    if isinstance(exc, discord.HTTPException):
        detail = redact(f"{type(exc).__name__} {exc.status} (code {exc.code}): {exc.text[:300]}")
        if exc.status == 429:
            return SendResult.failure(
                ErrorKind.RATE_LIMITED, detail, retry_after=_retry_after(exc)
            )
        if isinstance(exc, discord.Forbidden) or exc.code in _FORBIDDEN_CODES:
            return SendResult.failure(ErrorKind.FORBIDDEN, detail)
        if isinstance(exc, discord.NotFound) or exc.code in _NOT_FOUND_CODES:
            return SendResult.failure(ErrorKind.NOT_FOUND, detail)
        if exc.status == 413 or exc.code == 40005 or (
            exc.code == 50035 and any(m in exc.text for m in _TOO_LONG_MARKERS)
        ):
            return SendResult.failure(ErrorKind.TOO_LONG, detail)
        if isinstance(exc, discord.DiscordServerError):
            return SendResult.failure(ErrorKind.TRANSIENT, detail)
        return SendResult.failure(ErrorKind.UNKNOWN, detail)
    if isinstance(exc, TimeoutError):
        return SendResult.failure(ErrorKind.TIMEOUT, "request timed out")
    if isinstance(exc, aiohttp.ClientError | OSError | discord.ConnectionClosed):
        return SendResult.failure(ErrorKind.TRANSIENT, redact(f"{type(exc).__name__}: {exc}")[:300])
    return SendResult.failure(ErrorKind.UNKNOWN, redact(f"{type(exc).__name__}: {exc}")[:300])
