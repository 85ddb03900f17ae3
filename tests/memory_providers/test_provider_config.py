"""`memory.provider` and `memory.providers.<name>` through the real config loader and the real
console script: at most one external provider (a second is a configuration error, exit 78,
for `config check` and `gateway run` alike), each block validated by its provider's own model,
a plugin provider found through its entry point, and the provider's key never shown."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.config.errors import ConfigError
from gateway.config.load import parse_config
from tests.config.conftest import REPO, run_hermes
from tests.memory_providers.recorder import install_plugin

SERVES = "platforms:\n  api: {enabled: true, port: 0, api_keys: [k-local-0123456789]}\n"
MODEL = ("providers:\n  main: {base_url: 'http://127.0.0.1:9/v1', api_keys: [sk-x-0123456789],"
         " model: m}\n")
SM_KEY = "sm-live-abcdefghijklmnopqrstuvwx"


@pytest.fixture
def plugin_path(tmp_path: Path) -> str:
    """PYTHONPATH for a subprocess that has the `recorder` provider installed as a plugin."""
    return os.pathsep.join([str(install_plugin(tmp_path / "site")), str(REPO)])


def _write(home: Path, memory: str) -> None:
    root = home / ".hermes"
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    (root / "config.yaml").write_text(SERVES + MODEL + memory, encoding="utf-8")
    (root / ".env").write_text(f"SUPERMEMORY_API_KEY={SM_KEY}\n", encoding="utf-8")
    os.chmod(root / ".env", 0o600)


def test_a_second_external_provider_is_refused_by_check_and_run(
    home_dir: Path, plugin_path: str
) -> None:
    _write(home_dir, "memory:\n  provider: [supermemory, recorder]\n  providers:\n"
                     "    supermemory: {api_key: '${SUPERMEMORY_API_KEY}'}\n")
    for args in (("config", "check"), ("gateway", "run")):
        r = run_hermes(home_dir, *args, PYTHONPATH=plugin_path)
        assert r.returncode == 78, (args, r.stdout, r.stderr)
        assert ("memory.provider: at most one external memory provider at a time, got 2 "
                "(supermemory, recorder)") in r.stderr
        assert SM_KEY not in r.stderr + r.stdout
    lines = _problems({"provider": "supermemory, mem0"})
    assert lines[0].startswith("memory.provider: at most one external memory provider")


def test_one_plugin_provider_is_found_through_its_entry_point(
    home_dir: Path, plugin_path: str
) -> None:
    _write(home_dir, "memory:\n  provider: recorder\n  providers:\n    recorder: {prefix: x}\n")
    r = run_hermes(home_dir, "config", "check", PYTHONPATH=plugin_path)
    assert r.returncode == 0, r.stderr
    # Where the plugin is not installed (this process), the same block is an error.
    assert _problems({"provider": "recorder", "providers": {"recorder": {"prefix": "x"}}}) == [
        "memory.providers.recorder: unknown memory provider 'recorder' "
        "(installed: supermemory)",
        "memory.provider: unknown memory provider 'recorder' (installed: supermemory)"]


def test_the_provider_key_comes_from_env_and_is_never_shown(home_dir: Path) -> None:
    _write(home_dir, "memory:\n  provider: supermemory\n  providers:\n"
                     "    supermemory: {api_key: '${SUPERMEMORY_API_KEY}'}\n")
    r = run_hermes(home_dir, "config", "show")
    assert r.returncode == 0, r.stderr
    assert "provider: supermemory" in r.stdout and "namespace_prefix: hermes" in r.stdout
    assert SM_KEY not in r.stdout


def _problems(memory: dict[str, object]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config({"memory": memory}, env={})
    return info.value.lines()


def test_provider_blocks_are_validated_by_the_providers_model() -> None:
    assert _problems({"provider": "supermemory"}) == [
        "memory.providers.supermemory: api_key is required (the Supermemory API key, e.g. "
        '"${SUPERMEMORY_API_KEY}" set in the profile\'s .env)']
    lines = _problems({"provider": "supermemory", "providers": {
        "supermemory": {"api_key": SM_KEY, "limt": 3, "base_url": "ftp://x"}}})
    assert "memory.providers.supermemory.limt: unknown key (did you mean 'limit'?)" in lines
    assert "memory.providers.supermemory.base_url: must be an http:// or https:// URL" in lines
    assert all(SM_KEY not in line for line in lines)
    assert _problems({"provider": "nope"}) == [
        "memory.provider: unknown memory provider 'nope' (installed: supermemory)"]


def test_no_provider_is_the_default_and_the_built_in_memory_needs_no_name() -> None:
    cfg, warnings, _ = parse_config({}, env={})
    assert cfg.memory.provider_name() is None and warnings == []
    cfg, warnings, _ = parse_config({"memory": {"provider": "supermemory", "providers": {
        "supermemory": {"api_key": SM_KEY, "limit": 8}}}}, env={})
    assert warnings == []
    assert cfg.memory.provider_name() == "supermemory"
    assert SM_KEY in cfg.secret_values()  # registered for log redaction
