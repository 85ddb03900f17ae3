"""`hermes gateway run` as a subprocess in a throwaway profile, with the api adapter and the
fake OpenAI server of the test process."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml

__all__ = ["API_KEY", "GatewayProcess", "free_port", "write_profile"]

API_KEY = "sk-runtime-test-key"
HERMES = Path(sys.executable).with_name("hermes")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_profile(home: Path, model_url: str, *, api_port: int, health_port: int,
                  drain_timeout_s: float = 5.0, **gateway: Any) -> None:
    home.mkdir(parents=True, exist_ok=True)
    config = {
        "providers": {"main": {"base_url": model_url, "api_keys": ["sk-model-key"],
                               "model": "fake-model", "context_length": 32000,
                               "timeout_s": 30, "max_retries": 0}},
        "platforms": {"api": {"enabled": True, "host": "127.0.0.1", "port": api_port,
                              "api_keys": [API_KEY]}},
        "gateway": {"drain_timeout_s": drain_timeout_s,
                    "health": {"host": "127.0.0.1", "port": health_port},
                    "streaming": {"edit_interval_s": 0.05}, **gateway},
        "compression": {"enabled": False},
        "logging": {"level": "INFO", "file": {"enabled": False}},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


@dataclass
class GatewayProcess:
    home: Path
    api_port: int
    health_port: int
    proc: asyncio.subprocess.Process | None = None
    log_path: Path | None = None

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}/v1"

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.health_port}"

    async def start(self, *args: str) -> GatewayProcess:
        self.log_path = self.home / f"stderr-{time.monotonic_ns()}.log"
        env = {**os.environ, "HERMES_HOME": str(self.home), "HERMES_LOCK_DIR":
               str(self.home / "locks"), "NO_COLOR": "1"}
        env.pop("NOTIFY_SOCKET", None)
        with open(self.log_path, "wb") as err:
            self.proc = await asyncio.create_subprocess_exec(
                str(HERMES), "gateway", "run", *args, stdout=err, stderr=err, env=env)
        return self

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    async def wait_ready(self, timeout_s: float = 20.0) -> None:
        """Poll /readyz until 200; raises AssertionError (with the log) if the process exits
        or the timeout passes."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        async with aiohttp.ClientSession() as http:
            while time.monotonic() < deadline:
                if self.proc.returncode is not None:
                    raise AssertionError(f"gateway exited {self.proc.returncode}:\n"
                                         + self.output())
                try:
                    async with http.get(self.health_url + "/readyz") as resp:
                        if resp.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.05)
        raise AssertionError("gateway not ready in time:\n" + self.output())

    async def wait_exit(self, timeout_s: float = 30.0) -> int:
        assert self.proc is not None
        return await asyncio.wait_for(self.proc.wait(), timeout_s)

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    async def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
