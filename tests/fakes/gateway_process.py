"""Run `hermes gateway run` as a subprocess for end-to-end tests, and wait on conditions."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

__all__ = ["HERMES", "gateway_process", "until"]

HERMES = Path(sys.executable).with_name("hermes")


@contextlib.asynccontextmanager
async def gateway_process(
    home: Path, *, drop_env: tuple[str, ...] = ("HERMES_",)
) -> AsyncIterator[asyncio.subprocess.Process]:
    """The real gateway on profile `home`; stderr goes to `home/stderr.log`. Stopped with
    SIGTERM (then SIGKILL after 15 s) when the block ends, unless the test killed it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop_env)}
    env["HERMES_HOME"] = str(home)
    with (home / "stderr.log").open("ab") as err:
        proc = await asyncio.create_subprocess_exec(
            str(HERMES), "gateway", "run", env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL, stderr=err,
        )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def until(cond: Callable[[], bool], what: str, *, log: Path | None = None,
                timeout: float = 20.0) -> None:
    """Poll `cond` every 50 ms; on timeout fail naming `what` (with the gateway's stderr)."""

    async def poll() -> None:
        while not cond():
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(poll(), timeout)
    except TimeoutError:
        tail = ""
        if log is not None and log.exists():
            tail = "\n--- gateway stderr ---\n" + log.read_text(errors="replace")[-3000:]
        raise AssertionError(f"timed out waiting for {what}{tail}") from None
