"""`hermes gateway run` keeps the dataclass methods its start compiled (issue 21: start-up):
the first start of a profile writes `cache/dataclass-code-*.marshal` once it is ready, and a
restart of the same code compiles none of them again, so it leaves the file as it was (a
start that compiled anything, or no longer used a kept entry, would rewrite it)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from hermes_common.codecache import _read, file_name
from tests.gateway.runtime_proc import GatewayProcess, free_port, write_profile


async def _kept_after_ready(gw: GatewayProcess, path: Path, newer_than: int) -> int:
    """Start, wait for ready and for the file to be (re)written or settle; its mtime."""
    await gw.start()
    try:
        await gw.wait_ready()
        for _ in range(100):  # written by a thread right after ready
            if path.exists() and path.stat().st_mtime_ns > newer_than:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # time enough for an unwanted rewrite to show
    finally:
        gw.signal(signal.SIGTERM)
        assert await gw.wait_exit() == 0, gw.output()
    return path.stat().st_mtime_ns if path.exists() else 0


async def test_a_restart_compiles_no_dataclass_method_again(tmp_path: Path) -> None:
    home = tmp_path / "profile"
    gw = GatewayProcess(home, free_port(), free_port())
    write_profile(home, "http://127.0.0.1:9/v1", api_port=gw.api_port,
                  health_port=gw.health_port)
    kept = home / "cache" / file_name()

    first = await _kept_after_ready(gw, kept, 0)
    assert first, "the first start kept nothing:\n" + gw.output()
    codes = _read(kept)
    assert len(codes) > 500  # the gateway's own classes and its libraries'

    again = await _kept_after_ready(gw, kept, first)
    assert again == first, "a restart of the same code rewrote the kept methods"
    assert _read(kept).keys() == codes.keys()
