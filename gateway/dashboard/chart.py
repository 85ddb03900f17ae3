"""A small inline SVG bar chart of token usage per day (no script, no library)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from storage.types import DayUsage

__all__ = ["Bar", "usage_bars"]

WIDTH, HEIGHT, PAD = 420, 120, 18


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y_in: float
    h_in: float
    y_out: float
    h_out: float
    width: float
    day: str
    label: str
    input_tokens: int
    output_tokens: int


def usage_bars(rows: list[DayUsage], days: int, today: dt.date) -> list[Bar]:
    """One bar per day of the last `days` (input below, output stacked on top)."""
    by_day = {r.day: r for r in rows}
    span = [today - dt.timedelta(days=days - 1 - i) for i in range(days)]
    peak = max((r.input_tokens + r.output_tokens for r in rows), default=0) or 1
    slot = WIDTH / days
    bars = []
    for i, d in enumerate(span):
        r = by_day.get(d.isoformat())
        tin, tout = (r.input_tokens, r.output_tokens) if r else (0, 0)
        usable = HEIGHT - PAD
        h_in = usable * tin / peak
        h_out = usable * tout / peak
        y_in = usable - h_in
        bars.append(Bar(x=i * slot + 2, y_in=y_in, h_in=h_in, y_out=y_in - h_out, h_out=h_out,
                        width=max(slot - 4, 1), day=d.isoformat(), label=d.strftime("%d"),
                        input_tokens=tin, output_tokens=tout))
    return bars
