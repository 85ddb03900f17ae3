"""`${VAR}` and `${VAR:-default}` expansion in every string value of a parsed YAML tree.

Rules (documented in docs/configuration.md):
- `${VAR}`: the value of VAR; an unset VAR is an error naming the key path. A VAR set to the
  empty string expands to the empty string.
- `${VAR:-default}`: the value of VAR when it is set and not empty, else `default` (which may
  be empty). The default is literal text (no nested expansion).
- `$${` is an escape for a literal `${`. Any other `$` is left alone.
- Only values expand, never keys. Non-string scalars are untouched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.config.errors import ConfigError, Problem, format_path

__all__ = ["Expansion", "expand_env"]

_TOKEN_RE = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(slots=True)
class Expansion:
    """Result of `expand_env`: the expanded tree and which variables each path used."""

    value: Any
    used: dict[str, list[str]] = field(default_factory=dict)  # VAR -> key paths


def expand_env(data: Any, env: Mapping[str, str]) -> Expansion:
    """Expand every string value in `data` (dicts and lists, recursively) against `env`.

    Raises `ConfigError` listing every unset `${VAR}` without a default, each with its key
    path (e.g. `platforms.telegram.token`). Never puts a variable's value in an error.
    """
    problems: list[Problem] = []
    used: dict[str, list[str]] = {}

    def one(text: str, path: tuple[str | int, ...]) -> str:
        def sub(m: re.Match[str]) -> str:
            if m.group(0) == "$${":
                return "${"
            name, default = m.group(1), m.group(2)
            used.setdefault(name, []).append(format_path(path))
            val = env.get(name)
            if default is not None:
                return val if val else default
            if val is None:
                problems.append(
                    Problem(
                        format_path(path),
                        f"environment variable {name} is not set "
                        f"(set it in the environment or .env, or write ${{{name}:-default}})",
                    )
                )
                return ""
            return val

        return _TOKEN_RE.sub(sub, text)

    def walk(node: Any, path: tuple[str | int, ...]) -> Any:
        if isinstance(node, str):
            return one(node, path) if "$" in node else node
        if isinstance(node, Mapping):
            return {k: walk(v, (*path, str(k))) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, (*path, i)) for i, v in enumerate(node)]
        return node

    out = walk(data, ())
    if problems:
        raise ConfigError(problems)
    return Expansion(out, used)
