"""Configuration errors and the process exit codes tied to them (DESIGN.md §6)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["EXIT_CONFIG", "EXIT_OK", "EXIT_RESTART", "ConfigError", "Problem", "format_path"]

EXIT_OK = 0
EXIT_CONFIG = 78  # EX_CONFIG: a service manager must not restart
EXIT_RESTART = 75  # EX_TEMPFAIL: restart requested


def format_path(parts: tuple[str | int, ...] | list[str | int]) -> str:
    """`("platforms", "telegram", "token")` → `platforms.telegram.token`; ints → `[i]`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


@dataclass(frozen=True, slots=True)
class Problem:
    """One configuration problem: the dotted key path and what is wrong (never the value)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(Exception):
    """The configuration cannot be used. `str()` names every key path and its problem, and
    never contains a configured value."""

    def __init__(self, problems: list[Problem] | Problem, source: Path | None = None) -> None:
        self.problems: tuple[Problem, ...] = (
            (problems,) if isinstance(problems, Problem) else tuple(problems)
        )
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        where = f"{self.source}: " if self.source else ""
        if len(self.problems) == 1:
            return f"{where}{self.problems[0]}"
        body = "; ".join(str(p) for p in self.problems)
        return f"{where}{len(self.problems)} problems: {body}"

    def lines(self) -> list[str]:
        """One line per problem, for CLI output."""
        return [str(p) for p in self.problems]
