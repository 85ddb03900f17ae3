"""Which event loop the daemon runs on.

uvloop (libuv, in C) when it is installed and not switched off: the gateway spends a large
share of its CPU in the loop itself and in socket I/O (the model's HTTP streams, the
platforms' connections), and uvloop makes that part cheaper (about 9% more events/s in
bench_gateway). The standard asyncio loop otherwise (Windows, or `HERMES_EVENT_LOOP=asyncio`
to rule uvloop out while chasing a problem).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["ENV_VAR", "loop_factory", "loop_name", "run"]

ENV_VAR = "HERMES_EVENT_LOOP"
T = TypeVar("T")


def loop_factory(env: dict[str, str] | None = None) -> Callable[[], asyncio.AbstractEventLoop]:
    """The constructor of the loop to run on. `HERMES_EVENT_LOOP`: `auto` (default: uvloop if
    importable), `uvloop` (required: an error if it is missing) or `asyncio`."""
    choice = (os.environ if env is None else env).get(ENV_VAR, "auto").strip().lower() or "auto"
    if choice not in ("auto", "uvloop", "asyncio"):
        raise ValueError(f"{ENV_VAR} must be auto, uvloop or asyncio, not {choice!r}")
    if choice != "asyncio":
        try:
            import uvloop
        except ImportError:
            if choice == "uvloop":
                raise RuntimeError(
                    f"{ENV_VAR}=uvloop but uvloop is not installed (pip install uvloop)"
                ) from None
        else:
            return uvloop.new_event_loop
    return asyncio.new_event_loop


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """`uvloop` or `asyncio`, for /status and the start-up log."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run` on the chosen loop (exactly `asyncio.run` for the standard one)."""
    factory = loop_factory()
    with asyncio.Runner(loop_factory=None if factory is asyncio.new_event_loop else factory) \
            as runner:
        return runner.run(main)
