"""Recent warnings and errors for the dashboard: a logging handler with a small ring buffer.

Records arrive already redacted (the structlog chain redacts before any handler); only the
event name, level, logger, time and a few short fields are kept.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

__all__ = ["RecentErrors", "RecentError"]

_FIELDS = ("adapter", "error", "error_kind", "platform", "reason", "kind")


@dataclass(frozen=True, slots=True)
class RecentError:
    at: float
    level: str
    event: str
    logger: str
    detail: str


class RecentErrors(logging.Handler):
    """Keeps the last `size` records at WARNING and above."""

    def __init__(self, size: int = 50) -> None:
        super().__init__(level=logging.WARNING)
        self._items: deque[RecentError] = deque(maxlen=size)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg: Any = record.msg
            if isinstance(msg, dict):
                event = str(msg.get("event", ""))
                detail = " ".join(f"{k}={str(msg[k])[:120]}" for k in _FIELDS if k in msg)
            else:
                event, detail = str(record.getMessage())[:200], ""
            self._items.append(RecentError(record.created or time.time(),
                                           record.levelname.lower(), event[:200],
                                           record.name[:80], detail[:400]))
        except Exception:  # noqa: BLE001 - a log handler never raises
            pass

    def items(self) -> list[RecentError]:
        """Newest first."""
        return list(reversed(self._items))

    def attach(self) -> None:
        logging.getLogger().addHandler(self)

    def detach(self) -> None:
        logging.getLogger().removeHandler(self)
