"""Helpers of the MCP tests: the test server as a stdio command or an HTTP process."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from gateway.config.mcp import McpServerConfig

SERVER = Path(__file__).with_name("server.py")


def stdio_config(**kw: Any) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=[str(SERVER), "stdio"], **kw)


def stdio_block(**kw: Any) -> dict[str, Any]:
    """The `mcp_servers.<name>` block of the stdio test server (for config.yaml data)."""
    return {"command": sys.executable, "args": [str(SERVER), "stdio"], **kw}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def start_http(port: int) -> subprocess.Popen[bytes]:
    """The test server on streamable HTTP at 127.0.0.1:`port`, once it listens."""
    proc = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            await asyncio.sleep(0.05)
    return proc


def end(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


@contextlib.asynccontextmanager
async def http_server() -> AsyncIterator[str]:
    """The test server on streamable HTTP at 127.0.0.1; yields its URL."""
    port = free_port()
    proc = await start_http(port)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        end(proc)


async def until(pred: Callable[[], bool], what: str, timeout_s: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not pred():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)
