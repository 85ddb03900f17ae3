"""`platforms.<name>` blocks through the real `hermes` CLI: a typo is a configuration error
(exit 78 naming the key) for `config check` and `gateway run` alike, and validating every
platform's block never imports a platform SDK."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.config.conftest import PYTHON, REPO, run_hermes

TYPO = "platforms:\n  telegram:\n    enabled: true\n    token: '1:x'\n    conflict_retrys: 9\n"


def _write(home: Path, config: str) -> None:
    root = home / ".hermes"
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    (root / "config.yaml").write_text(config, encoding="utf-8")


@pytest.mark.parametrize("command", [("config", "check"), ("gateway", "run")])
def test_typo_in_a_platform_block_exits_78_naming_the_key(
    home_dir: Path, command: tuple[str, ...]
) -> None:
    _write(home_dir, TYPO)
    r = run_hermes(home_dir, *command)
    assert r.returncode == 78, r.stderr
    assert "platforms.telegram.conflict_retrys: unknown key (did you mean 'conflict_retries'?)" \
        in r.stderr
    assert "Traceback" not in r.stderr


def test_unknown_platform_exits_78_listing_the_adapters(home_dir: Path) -> None:
    _write(home_dir, "platforms:\n  slak: {enabled: true}\n")
    r = run_hermes(home_dir, "config", "check")
    assert r.returncode == 78
    assert "platforms.slak" in r.stderr and "did you mean 'slack'?" in r.stderr
    assert "available adapters: api, discord, fake, slack, telegram" in r.stderr


def test_check_prints_no_secret_of_an_invalid_block(home_dir: Path) -> None:
    _write(home_dir, "platforms:\n  slack: {enabled: true, bot_token: xoxb-12345-secret-part,"
                     " mode: carrier-pigeon}\n")
    r = run_hermes(home_dir, "config", "check")
    assert r.returncode == 78
    assert "platforms.slack.mode" in r.stderr
    assert "secret-part" not in r.stderr + r.stdout


_PROBE = """
import json, sys
from gateway.config.load import parse_config
cfg = parse_config({"platforms": {
    "telegram": {"enabled": True, "token": "1:x"},
    "slack": {"enabled": True, "bot_token": "xoxb-1", "app_token": "xapp-1"},
    "discord": {"enabled": True, "token": "d"},
    "api": {"enabled": True, "api_keys": ["k"]},
}}, env={})[0]
sdks = ("telegram", "slack_bolt", "slack_sdk", "discord", "aiohttp")
print(json.dumps({"enabled": cfg.platforms.enabled(),
                  "imported": sorted({m.split(".")[0] for m in sys.modules} & set(sdks))}))
"""


def test_validating_every_platform_imports_no_sdk() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    r = subprocess.run([str(PYTHON), "-c", _PROBE], cwd=REPO, env=env, capture_output=True,
                       text=True, timeout=60, check=True)
    out = json.loads(r.stdout)
    assert out["enabled"] == ["telegram", "slack", "discord", "api"]
    assert out["imported"] == []

