"""Exception → SendResult mapping (discord.py exceptions built as the library builds them)."""

from __future__ import annotations

from typing import Any

import discord
import pytest

from adapters.discord.errors import failure_from_exception
from gateway.events import ErrorKind


class _Resp:
    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.reason = "reason"
        self.headers = headers or {}


def _http(cls: type[discord.HTTPException], status: int, body: Any,
          headers: dict[str, str] | None = None) -> discord.HTTPException:
    return cls(_Resp(status, headers), body)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (_http(discord.Forbidden, 403, {"code": 50007, "message": "Cannot send"}),
         ErrorKind.FORBIDDEN),
        (_http(discord.Forbidden, 403, {"code": 50013, "message": "Missing Permissions"}),
         ErrorKind.FORBIDDEN),
        (_http(discord.NotFound, 404, {"code": 10003, "message": "Unknown Channel"}),
         ErrorKind.NOT_FOUND),
        (_http(discord.HTTPException, 400, {"code": 50035, "message": "Invalid Form Body",
                                            "errors": {"content": {"_errors": [{
                                                "code": "BASE_TYPE_MAX_LENGTH",
                                                "message": "Must be 2000 or fewer in length."
                                            }]}}}), ErrorKind.TOO_LONG),
        (_http(discord.HTTPException, 413, "Request entity too large"), ErrorKind.TOO_LONG),
        (_http(discord.DiscordServerError, 503, "upstream"), ErrorKind.TRANSIENT),
        (_http(discord.HTTPException, 400, {"code": 50006, "message": "Cannot send an empty "
                                            "message"}), ErrorKind.UNKNOWN),
        (TimeoutError(), ErrorKind.TIMEOUT),
        (ConnectionResetError(104, "reset"), ErrorKind.TRANSIENT),
    ],
)
def test_mapping(exc: BaseException, kind: ErrorKind) -> None:
    res = failure_from_exception(exc)
    assert not res.ok and res.error_kind is kind


def test_rate_limits_carry_retry_after() -> None:
    res = failure_from_exception(discord.RateLimited(42.5))
    assert res.error_kind is ErrorKind.RATE_LIMITED and res.retry_after == 42.5
    # discord.py gave up after its own retries: the 429 surfaces as an HTTPException
    exhausted = _http(discord.HTTPException, 429, {"message": "You are being rate limited.",
                                                   "retry_after": 3.0, "global": False},
                      {"Retry-After": "3"})
    res = failure_from_exception(exhausted)
    assert res.error_kind is ErrorKind.RATE_LIMITED and res.retry_after == 3.0
