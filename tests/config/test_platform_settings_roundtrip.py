"""Every key of every adapter, set to a non-default value in config.yaml, reaches the adapter:
the real loader validates `platforms.<name>` with the adapter's model, the registry builds the
adapter from it (as the runner does), and the adapter holds exactly those values. The `api`
adapter is then run to show the values at work (model name, body limit)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog
import yaml
from pydantic import SecretStr

from gateway.config.load import load_config
from gateway.ports import AdapterContext, CursorStore, PlatformSettings
from gateway.registry import adapter_spec, available_adapters, create_adapter
from tests.config.model_keys import leaves


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


COMMON = {"enabled": True, "allowed_users": ["11", "22"], "allow_all": True,
          "require_mention": False, "tool_progress": "all", "toolsets": ["files", "web"]}

VALUES: dict[str, dict[str, Any]] = {
    "telegram": {
        **COMMON, "token": "123456:tg-token-value", "base_url": "http://127.0.0.1:1/bot",
        "base_file_url": "http://127.0.0.1:1/file/bot", "mode": "webhook",
        "poll_timeout_s": 12.5,
        "webhook": {"host": "0.0.0.0", "port": 9443, "path": "/hook",
                    "url": "https://bot.example/hook", "secret_token": "wh-secret-value"},
        "conflict_retries": 9, "conflict_backoff_s": 0.5, "network_retries": 7,
        "network_backoff_s": 0.25, "max_download_bytes": 1_000_000, "request_timeout_s": 7.5,
    },
    "slack": {
        **COMMON, "bot_token": "xoxb-value-1", "app_token": "xapp-value-2",
        "signing_secret": "signing-value-3", "mode": "http",
        "api_base_url": "http://127.0.0.1:2/api/",
        "http": {"host": "0.0.0.0", "port": 3100, "path": "/ev"},
        "ping_interval_s": 3.0, "timeout_s": 4.5, "connect_timeout_s": 6.0, "give_up_s": 40.0,
    },
    "discord": {
        **COMMON, "token": "discord-token-value", "api_base_url": "http://127.0.0.1:3/api/v10",
        "gateway_url": "ws://127.0.0.1:3/gateway", "liveness_window_s": 200.0,
        "guild_ready_timeout_s": 0.5, "request_timeout_s": 30.0, "max_ratelimit_wait_s": 45.0,
        "reidentify_delay_s": 1.0, "shards": 3,
    },
    "api": {
        **COMMON, "require_mention": True, "host": "127.0.0.2", "port": _free_port(),
        "api_keys": ["key-one-value", "key-two-value"], "model_name": "house-model",
        "turn_timeout_s": 30.0, "keepalive_s": 2.0, "max_body_bytes": 4096,
    },
    "cli": {**COMMON, "require_mention": True, "tool_progress": "new",
            "socket_path": "/tmp/hermes-roundtrip-cli.sock"},
    "fake": {
        **COMMON, "edit": False, "typing": False, "media": False, "delete": False,
        "reactions": True, "threads": False, "max_length": 500, "length_measure": "utf16",
        "dialect": "plain", "liveness_window_s": 5.0, "trusted_auth": True, "push": False,
        "progress_interval_s": 0.2,
    },
}


def _defaults(name: str) -> dict[tuple[str, ...], Any]:
    """Key path → default, for every key of the adapter's settings model."""
    return {path: field.get_default(call_default_factory=True)
            for path, field in leaves(adapter_spec(name).settings).items()}


def _lookup(node: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        node = node[part] if isinstance(node, Mapping) else getattr(node, part)
    if isinstance(node, SecretStr):
        return node.get_secret_value()
    if isinstance(node, list):
        return [v.get_secret_value() if isinstance(v, SecretStr) else v for v in node]
    return node


def test_the_table_sets_every_key_of_every_adapter_to_a_non_default() -> None:
    assert set(VALUES) == set(available_adapters())
    for name, block in VALUES.items():
        defaults = _defaults(name)
        assert [p for p in defaults if not _has(block, p)] == [], name
        assert [p for p, d in defaults.items() if _lookup(block, p) == d] == [], name


def _has(block: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    node: Any = block
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


@pytest.fixture
def config_home(tmp_path: Path) -> Path:
    home = tmp_path / "profile"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump({"platforms": VALUES}, sort_keys=False),
                                      encoding="utf-8")
    return home


def test_every_key_reaches_the_adapter_built_from_the_loaded_config(config_home: Path) -> None:
    loaded = load_config(config_home, environ={}, register=False)
    assert loaded.config.platforms.enabled() == list(VALUES)
    for name, block in VALUES.items():
        adapter = create_adapter(name, loaded.config.platforms[name])
        assert isinstance(adapter.settings, adapter_spec(name).settings)
        for path in _defaults(name):
            assert _lookup(adapter.settings, path) == _lookup(block, path), (name, path)
        assert isinstance(adapter.settings, PlatformSettings)
    fake = create_adapter("fake", loaded.config.platforms["fake"])
    for key in ("edit", "typing", "media", "delete", "reactions", "threads", "max_length",
                "length_measure", "dialect", "liveness_window_s", "trusted_auth", "push"):
        assert getattr(fake.capabilities, key) == VALUES["fake"][key], key


async def test_the_api_adapter_runs_with_the_configured_values(
    config_home: Path, tmp_path: Path
) -> None:
    loaded = load_config(config_home, environ={}, register=False)
    adapter = create_adapter("api", loaded.config.platforms["api"])
    connected, stop = asyncio.Event(), asyncio.Event()

    async def emit(_event: Any) -> bool:
        return True

    ctx = AdapterContext(name="api", emit=emit, progress=lambda: None, stop_event=stop,
                         cursors=CursorStore(), cache_dir=tmp_path,
                         logger=structlog.get_logger("test.roundtrip"), connected=connected.set)
    task = asyncio.create_task(adapter.start(ctx), name="api-under-test")
    await asyncio.wait_for(connected.wait(), 10)
    base = f"http://127.0.0.2:{VALUES['api']['port']}"
    try:
        async with aiohttp.ClientSession() as http:
            for key in VALUES["api"]["api_keys"]:
                async with http.get(f"{base}/v1/models",
                                    headers={"Authorization": f"Bearer {key}"}) as r:
                    assert r.status == 200
                    assert [m["id"] for m in (await r.json())["data"]] == ["house-model"]
            async with http.post(f"{base}/v1/chat/completions", data=b"x" * 5000,
                                 headers={"Authorization": "Bearer key-one-value",
                                          "Content-Type": "application/json"}) as r:
                assert r.status == 413
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
