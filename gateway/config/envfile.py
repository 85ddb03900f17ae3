"""Reading a profile's `.env` (light: python-dotenv only, imported on use)."""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

from gateway.config.errors import ConfigError, Problem

__all__ = ["apply_env_file", "read_env_file"]

_RESERVED_ENV = frozenset({"HERMES_HOME"})


def read_env_file(path: Path) -> dict[str, str]:
    """Variables defined in a `.env` file ({} when missing); `HERMES_HOME` is ignored.
    Raises ConfigError when the file exists but cannot be read."""
    if not path.is_file():
        return {}
    from dotenv import dotenv_values

    try:
        values = dotenv_values(path, interpolate=True)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(Problem(".env", f"cannot read: {type(exc).__name__}"), path) from None
    return {k: v for k, v in values.items() if v is not None and k not in _RESERVED_ENV}


def apply_env_file(path: Path, environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Copy `.env` variables into `environ` (default `os.environ`) where not already set:
    `.env` never overrides the process environment. Returns the names set. Must not raise
    (an unreadable file is skipped; the loader reports it)."""
    env = os.environ if environ is None else environ
    try:
        values = read_env_file(path)
    except ConfigError:
        return []
    added = [k for k in values if k not in env]
    for k in added:
        env[k] = values[k]
    return added
