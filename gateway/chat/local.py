"""A gateway in `hermes chat`'s own process, serving only the cli adapter.

Started when no gateway serves the profile's chat socket. It is the real `GatewayRunner` (the
same storage writer, agent, tools, commands and compression) and takes the profile's instance
lock, so a `hermes gateway run` started meanwhile refuses, and vice versa.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import yaml

from gateway.config.models import HermesConfig
from gateway.config.platforms import PlatformsConfig
from gateway.paths import ProfilePaths

__all__ = ["chat_only", "demo_gateway", "local_gateway", "socket_path"]


def socket_path(p: ProfilePaths, cfg: HermesConfig) -> Path:
    """Where the profile's cli adapter listens (`platforms.cli.socket_path` or the default)."""
    block = cfg.platforms.root.get("cli")
    custom = getattr(block, "socket_path", None) if block is not None else None
    return Path(custom).expanduser() if custom else p.run_dir / "cli.sock"


def chat_only(cfg: HermesConfig) -> HermesConfig:
    """`cfg` with the cli adapter as its only platform, the health server and the dashboard
    off (a terminal chat opens no network port)."""
    block = cfg.platforms.root.get("cli")
    data: dict[str, Any] = block.model_dump() if block is not None else {}
    data["enabled"] = True
    health = cfg.gateway.health.model_copy(update={"port": 0})
    return cfg.model_copy(update={
        "platforms": PlatformsConfig.model_validate({"cli": data}),
        "gateway": cfg.gateway.model_copy(update={"health": health}),
        "dashboard": cfg.dashboard.model_copy(update={"enabled": False}),
    })


@contextlib.asynccontextmanager
async def local_gateway(cfg: HermesConfig, p: ProfilePaths) -> AsyncIterator[Path]:
    """Run a chat-only gateway for the profile; yields its socket path. Raises
    `gateway.instance.AlreadyRunning` when another process holds the profile."""
    from gateway.runner import GatewayRunner

    runner = GatewayRunner(chat_only(cfg), p)
    try:
        await runner.start()  # a failed start is torn down by shutdown() too
        yield socket_path(p, cfg)
    finally:
        await runner.shutdown()


@contextlib.asynccontextmanager
async def demo_gateway() -> AsyncIterator[Path]:
    """`hermes chat --demo`: a throwaway profile and the offline stand-in model."""
    from gateway.config.load import load_config
    from gateway.demo.standin import MODEL_NAME, StandInModel
    from gateway.logging import configure_logging
    from gateway.paths import ensure_profile_dirs, paths

    with tempfile.TemporaryDirectory(prefix="hermes-chat-demo-") as tmp:
        home = Path(tmp)
        configure_logging(level="WARNING", fmt="json", log_dir=home / "logs",
                          stream=io.StringIO(), profile="demo")
        async with StandInModel() as model:
            (home / "config.yaml").write_text(yaml.safe_dump({
                "providers": {"main": {"base_url": model.base_url,
                                       "api_keys": ["offline-standin"], "model": MODEL_NAME,
                                       "context_length": 16000, "max_retries": 0}},
                "compression": {"protect_first_n": 1},
                "platforms": {"cli": {"enabled": True}},
            }))
            cfg = load_config(home).config
            async with local_gateway(cfg, ensure_profile_dirs(paths(home))) as sock:
                yield sock
