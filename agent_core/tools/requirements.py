"""Ready-made requirement checks for `Tool.requirements` (why a tool cannot be offered).

    Tool(..., requirements=all_of(setting(cfg.api_key, "tools.web.search.api_key"),
                                  binary("bwrap")))

Each check is cheap and never raises; it returns None when met, else a short reason that
`/tools` shows next to the tool.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

__all__ = ["all_of", "binary", "setting"]

Check = Callable[[], str | None]


def binary(name: str) -> Check:
    """Met when the program `name` is on `PATH` (looked up at each check: an install or
    removal shows in the next session)."""

    def check() -> str | None:
        return None if shutil.which(name) else f"the program {name!r} is not installed"

    return check


def setting(value: object, key: str) -> Check:
    """Met when the config value (an API key, a base URL) given is set and not empty."""
    missing = value is None or (isinstance(value, str | list | dict | tuple) and not value)

    def check() -> str | None:
        return f"{key} is not set" if missing else None

    return check


def all_of(*checks: Check) -> Check:
    """Met when every check is; the first unmet one's reason otherwise."""

    def check() -> str | None:
        for one in checks:
            reason = one()
            if reason is not None:
                return reason
        return None

    return check
