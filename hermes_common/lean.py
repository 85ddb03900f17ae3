"""Importing libraries without the parts we never use, when those parts cost start-up time.

structlog imports `rich` (and with it pygments and rich's traceback machinery, about a tenth
of a second and 50 modules) at import time whenever rich is installed, only to offer pretty
console tracebacks. Our logging renders tracebacks plainly (`gateway.logging` passes
`structlog.dev.plain_traceback`), and rich is only installed because the CLI's table
commands use it. `structlog_without_rich()` imports structlog with `rich` hidden, so
structlog takes its no-rich path; rich itself stays importable afterwards for the CLI.
"""

from __future__ import annotations

import sys

__all__ = ["structlog_without_rich"]


def structlog_without_rich() -> None:
    """Import structlog (once) with `rich` hidden from it. A no-op when either is loaded."""
    if "structlog" in sys.modules or "rich" in sys.modules:
        return
    sys.modules["rich"] = None  # type: ignore[assignment]  # `import rich` -> ImportError
    try:
        import structlog  # noqa: F401
    finally:
        if sys.modules.get("rich", "") is None:
            del sys.modules["rich"]
