"""CLI entry work done once per process, before any command reads a path.

`bootstrap()` resolves the profile home (`-p` > `$HERMES_HOME` > sticky > `~/.hermes`), fixes it
with `gateway.paths.set_home`, exports `HERMES_HOME` for child processes, fills unset process
variables from the profile's `.env` (never overriding), and remembers `--log-format`.
It imports nothing heavy: no typer, pydantic, structlog or SDKs (`hermes gateway run` starts
without typer: `gateway.cli.entry`).

`fail()` / `warn()` are the CLI's way to report: one redacted line on stderr, no traceback
(`fail` exits through `SystemExit`, which typer passes on as the exit code).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from gateway.config.errors import EXIT_CONFIG
from gateway.config.redact import redact_text

if TYPE_CHECKING:
    from gateway.config.load import LoadedConfig

__all__ = [
    "EXIT_USAGE",
    "BootState",
    "bootstrap",
    "current",
    "fail",
    "load_config_or_exit",
    "run_async",
    "unexpected_error",
    "warn",
]

EXIT_USAGE = 2
LOG_FORMATS = ("json", "console", "auto")


@dataclass(frozen=True, slots=True)
class BootState:
    """How this process's profile home was chosen."""

    home: Path
    source: str  # flag | env | sticky | default
    profile: str | None  # None for a custom HERMES_HOME outside ~/.hermes
    log_format: str | None


_STATE: BootState | None = None


def fail(message: str, code: int = 1) -> NoReturn:
    """Print `hermes: error: <message>` (redacted) on stderr and exit with `code`."""
    print(f"hermes: error: {redact_text(message)}", file=sys.stderr)
    raise SystemExit(code)


def unexpected_error(exc: Exception) -> int:
    """Report an error no command handled as one redacted line on stderr; exit code 1.
    Re-raises it (the traceback) when HERMES_DEBUG is set."""
    if os.environ.get("HERMES_DEBUG"):
        raise exc
    detail = str(exc).splitlines()[0] if str(exc) else ""
    msg = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    print(f"hermes: error: {redact_text(msg)}", file=sys.stderr)
    return 1


def warn(message: str) -> None:
    """Print `hermes: warning: <message>` (redacted) on stderr."""
    print(f"hermes: warning: {redact_text(message)}", file=sys.stderr)


def bootstrap(*, profile: str | None, log_format: str | None) -> BootState:
    """Resolve and fix the profile home for this process. Exits 2 for a bad `--log-format`
    or profile name, 78 when `-p` names a profile that does not exist."""
    global _STATE
    from gateway import profiles
    from gateway.logging import set_cli_format
    from gateway.paths import paths, set_home

    if log_format is not None and log_format.lower() not in LOG_FORMATS:
        fail(f"--log-format must be one of {', '.join(LOG_FORMATS)}", EXIT_USAGE)
    try:
        res = profiles.resolve_home(profile)
    except profiles.InvalidProfileName as exc:
        fail(str(exc), EXIT_USAGE)
    except profiles.ProfileError as exc:
        fail(str(exc), EXIT_CONFIG)
    if res.warning:
        warn(res.warning)
    set_home(res.home)
    os.environ["HERMES_HOME"] = str(res.home)
    env_file = paths().env_file
    if env_file.is_file():
        from gateway.config.envfile import apply_env_file

        apply_env_file(env_file)
    fmt = log_format.lower() if log_format else None
    set_cli_format(fmt)
    _STATE = BootState(res.home, res.source, res.name, fmt)
    return _STATE


def current() -> BootState:
    """The state set by `bootstrap()`; resolves from the environment if it never ran."""
    if _STATE is not None:
        return _STATE
    from gateway.paths import home
    from gateway.profiles import profile_name_for

    h = home()
    return BootState(h, "env" if os.environ.get("HERMES_HOME") else "default",
                     profile_name_for(h), None)


def load_config_or_exit() -> LoadedConfig:
    """Load the active profile's config. On a `ConfigError`, print one line per problem
    (`hermes: config error in <file>: <key path>: <problem>`) and exit 78. Warnings are
    returned in `LoadedConfig.warnings`, not printed."""
    from gateway.config.errors import ConfigError
    from gateway.config.load import load_config

    try:
        return load_config()
    except ConfigError as exc:
        where = f" in {exc.source}" if exc.source else ""
        for line in exc.lines():
            print(f"hermes: config error{where}: {redact_text(line)}", file=sys.stderr)
        raise SystemExit(EXIT_CONFIG) from None


T = TypeVar("T")


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coro)`, importing asyncio only for the commands that need it (`--help`
    and the quick commands stay free of it: issue 21)."""
    import asyncio

    return asyncio.run(coro)

