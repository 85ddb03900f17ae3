"""`tools:` and `mcp_servers:`: which toolsets a chat gets, the deprecated key, server blocks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.config import ConfigError, parse_config, redacted_config
from gateway.config.tools import DEFAULT_TOOLSETS


def load(data: dict[str, Any]) -> tuple[Any, list[str]]:
    cfg, warnings, _ = parse_config(data, env={"NOTES_TOKEN": "tok-123456-secret"})
    return cfg, warnings


def test_defaults_leave_the_terminal_off() -> None:
    cfg, _ = load({})
    assert cfg.toolsets("telegram", "1") == list(DEFAULT_TOOLSETS)
    assert "terminal" not in DEFAULT_TOOLSETS and "mcp" in DEFAULT_TOOLSETS


def test_the_most_specific_list_wins() -> None:
    cfg, _ = load({
        "tools": {"toolsets": ["files", "memory"], "chats": {"telegram:-100": ["web"]}},
        "platforms": {"telegram": {"toolsets": ["files", "mcp"]}},
    })
    assert cfg.toolsets("telegram", "-100") == ["web"]
    assert cfg.toolsets("telegram", "42") == ["files", "mcp"]
    assert cfg.toolsets("api", "42") == ["files", "memory"]
    assert cfg.toolsets() == ["files", "memory"]


def test_the_old_agent_toolsets_key_still_works_with_a_warning() -> None:
    cfg, warnings = load({"agent": {"toolsets": ["files"]}})
    assert cfg.toolsets("api", "x") == ["files"]
    assert any("agent.toolsets is deprecated" in w for w in warnings)
    newer, _ = load({"agent": {"toolsets": ["files"]}, "tools": {"toolsets": ["memory"]}})
    assert newer.toolsets("api", "x") == ["memory"]


def test_a_server_needs_exactly_one_transport() -> None:
    with pytest.raises(ConfigError) as both:
        load({"mcp_servers": {"x": {"command": "srv", "url": "http://127.0.0.1:1/mcp"}}})
    assert "mcp_servers.x" in str(both.value)
    with pytest.raises(ConfigError):
        load({"mcp_servers": {"x": {}}})
    with pytest.raises(ConfigError) as bad_url:
        load({"mcp_servers": {"x": {"url": "ftp://host/mcp"}}})
    assert "mcp_servers.x.url" in str(bad_url.value)


@pytest.mark.parametrize("name", ["a__b", "has space", "x" * 49, "dot.ted"])
def test_a_server_name_must_fit_in_tool_names(name: str) -> None:
    with pytest.raises(ConfigError) as err:
        load({"mcp_servers": {name: {"command": "srv"}}})
    assert "mcp__<server>__<tool>" in str(err.value)


def test_server_env_and_headers_are_secrets() -> None:
    cfg, _ = load({"mcp_servers": {
        "notes": {"command": "srv", "env": {"NOTES_TOKEN": "${NOTES_TOKEN}"}},
        "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer abc-xyz-1"}},
    }})
    assert "tok-123456-secret" in cfg.secret_values()
    assert "Bearer abc-xyz-1" in cfg.secret_values()
    shown = json.dumps(redacted_config(cfg))
    assert "tok-123456-secret" not in shown and "abc-xyz-1" not in shown
    assert "tok-123456-secret" not in repr(cfg)
    assert cfg.mcp_servers["notes"].env["NOTES_TOKEN"].get_secret_value() == "tok-123456-secret"
