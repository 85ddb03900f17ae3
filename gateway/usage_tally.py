"""`UsageTally`: the tokens this process recorded, per UTC day of their session's start,
kept by the turn layer as plain counters, with no I/O.

The dashboard reads the store's usage per day (`Reports.usage_by_day`, a sum over every
session of 14 days) now and then and adds what the tally gained since that read, so its
chart is current right after a turn without that query per turn or per page. Tokens count on
the day their session started, as in `usage_by_day`. A write that commits while the
dashboard reads the store may count twice until its next read (10 s).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["TallySnapshot", "UsageTally"]


@dataclass(frozen=True, slots=True)
class TallySnapshot:
    """The tally at one moment: per day (`YYYY-MM-DD`, UTC) of the session's start, the
    (input, output) tokens recorded."""

    days: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def since(self, earlier: TallySnapshot) -> TallySnapshot:
        """What was added after `earlier` (a snapshot of the same tally)."""
        days = {}
        for day, (tin, tout) in self.days.items():
            was_in, was_out = earlier.days.get(day, (0, 0))
            if tin != was_in or tout != was_out:
                days[day] = (tin - was_in, tout - was_out)
        return TallySnapshot(days)


def _day(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).date().isoformat()


class UsageTally:
    """Counters only: cheap enough for every turn (no lock: one event loop updates them)."""

    def __init__(self) -> None:
        self._days: dict[str, tuple[int, int]] = {}

    def usage_recorded(self, started_at: float, input_tokens: int, output_tokens: int) -> None:
        """A turn's tokens, written to the session that started at `started_at`."""
        day = _day(started_at)
        tin, tout = self._days.get(day, (0, 0))
        self._days[day] = (tin + input_tokens, tout + output_tokens)

    def snapshot(self) -> TallySnapshot:
        return TallySnapshot(dict(self._days))
