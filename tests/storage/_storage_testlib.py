"""Helpers shared by the storage tests (unique module name: the tests dir has no packages)."""

from __future__ import annotations


class FakeClock:
    """A settable epoch clock injected into the store."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def turn(user: str, reply: str) -> list[dict]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
