"""Iteration budget: how many model calls one turn (or one subagent run) may make."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["DEFAULT_MAX_ITERATIONS", "REFUNDED_TOOLSETS", "SUBAGENT_MAX_ITERATIONS", "IterationBudget"]

DEFAULT_MAX_ITERATIONS = 90
SUBAGENT_MAX_ITERATIONS = 50
REFUNDED_TOOLSETS: frozenset[frozenset[str]] = frozenset({frozenset({"execute_code"})})


class IterationBudget:
    """One unit per model call. `consume()` is False once the budget is spent.

    A tool batch whose set of tool names is exactly `{"execute_code"}` gets its unit back
    (`refund_for_batch`): scripted tool use should not eat the reasoning budget.
    """

    __slots__ = ("max_total", "_used")

    def __init__(self, max_total: int = DEFAULT_MAX_ITERATIONS) -> None:
        if max_total < 1:
            raise ValueError("max_total must be >= 1")
        self.max_total = max_total
        self._used = 0

    @property
    def used(self) -> int:
        return self._used

    @property
    def remaining(self) -> int:
        return max(0, self.max_total - self._used)

    def consume(self) -> bool:
        if self._used >= self.max_total:
            return False
        self._used += 1
        return True

    def refund(self) -> None:
        if self._used > 0:
            self._used -= 1

    def refund_for_batch(self, tool_names: Iterable[str]) -> bool:
        """Refund one unit when the batch's set of names is refundable; True if refunded."""
        if frozenset(tool_names) in REFUNDED_TOOLSETS:
            self.refund()
            return True
        return False
