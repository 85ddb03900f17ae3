"""Session reset policy (none / idle / daily / both): a pure decision."""

from __future__ import annotations

import datetime as dt
from typing import Literal

__all__ = ["ResetMode", "reset_reason"]

ResetMode = Literal["none", "idle", "daily", "both"]


def reset_reason(
    mode: ResetMode,
    *,
    last_activity: float | None,
    now: float,
    idle_minutes: int,
    daily_hour: int,
    tz: dt.tzinfo | None = None,
) -> str | None:
    """Why a session whose last activity was at `last_activity` must be reset now, or None.

    idle: more than `idle_minutes` without activity. daily: the local `daily_hour` boundary
    was crossed since the last activity. Times are epoch seconds; `tz` defaults to local time.
    """
    if mode == "none" or last_activity is None:
        return None
    if mode in ("idle", "both") and now - last_activity >= idle_minutes * 60:
        return f"idle for more than {idle_minutes} minutes"
    if mode in ("daily", "both"):
        last = dt.datetime.fromtimestamp(last_activity, tz or dt.datetime.now().astimezone().tzinfo)
        cur = dt.datetime.fromtimestamp(now, last.tzinfo)
        boundary = cur.replace(hour=daily_hour, minute=0, second=0, microsecond=0)
        if boundary > cur:
            boundary -= dt.timedelta(days=1)
        if last < boundary <= cur:
            return f"daily reset at {daily_hour:02d}:00"
    return None
