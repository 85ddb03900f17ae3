"""`hermes config check|show` and `--version` through the real console script; a typo in a
`platforms.<name>` block is a configuration error (exit 78 naming the key) for `config check`
and `gateway run` alike, and validating every platform's block never imports a platform SDK."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.config.conftest import PYTHON, REPO, run_hermes

TG_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
SLACK_BOT = "xoxb-1111111111-2222222222-abcdefghijklmnop"
SLACK_APP = "xapp-1-A0000000000-1111111111-abcdef0123456789"
API_KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz012345"
ODD_SECRET = "plain-looking-password-value"
# One enabled platform: a profile without any is refused (see the fresh-profile test).
SERVES = "platforms:\n  api: {enabled: true, port: 0, api_keys: [k-local-0123456789]}\n"


def _write(home: Path, config: str, env: str = "") -> Path:
    root = home / ".hermes"
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    (root / "config.yaml").write_text(config, encoding="utf-8")
    if env:
        (root / ".env").write_text(env, encoding="utf-8")
        os.chmod(root / ".env", 0o600)
    return root


def test_version(home_dir: Path) -> None:
    r = run_hermes(home_dir, "--version")
    assert r.returncode == 0
    assert r.stdout.startswith("hermes ")


def test_a_fresh_profile_is_refused_by_check_and_run_alike(home_dir: Path) -> None:
    for args in (("config", "check"), ("gateway", "run")):
        r = run_hermes(home_dir, *args)
        assert r.returncode == 78, (args, r.stderr)
        assert "no platform is enabled" in r.stderr
        assert "no model provider" in r.stderr
        assert "hermes demo" in r.stderr and "hermes config check" in r.stderr
        assert "README" in r.stderr and "Traceback" not in r.stderr
        assert r.stderr.count("\n") < 12  # short, human; no JSON log lines
        assert "{" not in r.stderr


def test_check_exits_0_on_a_valid_config(home_dir: Path) -> None:
    _write(home_dir, SERVES)
    r = run_hermes(home_dir, "config", "check")
    assert r.returncode == 0, r.stderr
    assert "config OK" in r.stdout and "platforms enabled: api" in r.stdout
    _write(
        home_dir,
        "platforms:\n  telegram:\n    enabled: true\n    token: ${TELEGRAM_BOT_TOKEN}\n",
        env=f"TELEGRAM_BOT_TOKEN={TG_TOKEN}\n",
    )
    r = run_hermes(home_dir, "config", "check")
    assert r.returncode == 0, r.stderr
    assert "telegram" in r.stdout


def test_check_exits_78_naming_key_path_for_unset_var(home_dir: Path) -> None:
    _write(
        home_dir, "platforms:\n  telegram:\n    enabled: true\n    token: ${TELEGRAM_BOT_TOKEN}\n"
    )
    r = run_hermes(home_dir, "config", "check")
    assert r.returncode == 78
    assert "platforms.telegram.token" in r.stderr
    assert "TELEGRAM_BOT_TOKEN" in r.stderr
    assert "Traceback" not in r.stderr


def test_check_exits_78_for_invalid_value_and_yaml_syntax(home_dir: Path) -> None:
    _write(home_dir, "gateway:\n  busy_mode: whenever\n")
    r = run_hermes(home_dir, "config", "check")
    assert r.returncode == 78
    assert "gateway.busy_mode" in r.stderr
    _write(home_dir, "gateway: [unclosed\n")
    r = run_hermes(home_dir, "config", "check")
    assert r.returncode == 78
    assert "YAML syntax error" in r.stderr and "line" in r.stderr
    assert "Traceback" not in r.stderr


def test_check_warns_on_unknown_key_and_strict_fails(home_dir: Path) -> None:
    _write(home_dir, "gateway:\n  drain_timeout: 10\n" + SERVES)
    r = run_hermes(home_dir, "config", "check")
    assert r.returncode == 0
    assert "gateway.drain_timeout" in r.stderr and "drain_timeout_s" in r.stderr
    r = run_hermes(home_dir, "config", "check", "--strict")
    assert r.returncode == 78


def test_process_env_beats_dotenv_in_cli(home_dir: Path) -> None:
    _write(home_dir, "providers:\n  main:\n    model: ${HERMES_TEST_MODEL}\n",
           env="HERMES_TEST_MODEL=from-dotenv\n")
    r = run_hermes(home_dir, "config", "show", "--json")
    assert '"model": "from-dotenv"' in r.stdout
    r = run_hermes(home_dir, "config", "show", "--json", HERMES_TEST_MODEL="from-process")
    assert '"model": "from-process"' in r.stdout


def test_show_never_prints_secrets(home_dir: Path) -> None:
    _write(
        home_dir,
        f"""\
providers:
  main:
    api_keys: ["{API_KEY}", "${{SECOND_KEY}}"]
    base_url: https://user:{ODD_SECRET}@proxy.example/v1
platforms:
  telegram: {{enabled: true, token: "${{TELEGRAM_BOT_TOKEN}}", mode: webhook,
             webhook: {{url: "https://bot.example/hook", secret_token: "{ODD_SECRET}"}}}}
  slack: {{enabled: true, bot_token: "{SLACK_BOT}", app_token: "${{SLACK_APP_TOKEN}}",
          signing_secret: "{ODD_SECRET}"}}
  discord: {{enabled: true, token: "{ODD_SECRET}x"}}
  api: {{enabled: true, api_keys: ["{ODD_SECRET}-api"]}}
""",
        env=f"TELEGRAM_BOT_TOKEN={TG_TOKEN}\nSLACK_APP_TOKEN={SLACK_APP}\n"
        f"SECOND_KEY=k2-{ODD_SECRET}\n",
    )
    for args in (("config", "show"), ("config", "show", "--json"), ("config", "check")):
        r = run_hermes(home_dir, *args)
        assert r.returncode == 0, r.stderr
        out = r.stdout + r.stderr
        for secret in (TG_TOKEN, "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", SLACK_BOT, SLACK_APP,
                       API_KEY, ODD_SECRET):
            assert secret not in out, (args, secret)
    shown = yaml.safe_load(run_hermes(home_dir, "config", "show").stdout)
    assert shown["platforms"]["telegram"]["token"] == "[REDACTED]"
    assert shown["providers"]["main"]["api_keys"] == ["[REDACTED]", "[REDACTED]"]
    assert shown["platforms"]["slack"]["signing_secret"] == "[REDACTED]"
    assert shown["platforms"]["discord"]["token"] == "[REDACTED]"
    assert shown["platforms"]["telegram"]["webhook"]["url"] == "https://bot.example/hook"
    assert shown["gateway"]["drain_timeout_s"] == 30


def test_unset_secret_shows_as_null_not_redacted(home_dir: Path) -> None:
    _write(home_dir, "platforms:\n  telegram: {enabled: false}\n")
    shown = yaml.safe_load(run_hermes(home_dir, "config", "show").stdout)
    assert shown["platforms"]["telegram"]["token"] is None


TYPO = "platforms:\n  telegram:\n    enabled: true\n    token: '1:x'\n    conflict_retrys: 9\n"


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
    assert "available adapters: api, cli, discord, fake, slack, telegram" in r.stderr


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



def test_a_health_server_bound_beyond_loopback_needs_a_token(home_dir: Path) -> None:
    _write(home_dir, "gateway:\n  health: {host: 0.0.0.0, port: 8765}\n")
    r = run_hermes(home_dir, "config", "check")
    assert r.returncode == 78
    assert "gateway.health.token" in r.stderr and "loopback" in r.stderr
    _write(home_dir, "gateway:\n  health: {host: 0.0.0.0, port: 8765, token: \"${PROBE_TOKEN}\"}\n"
           + SERVES,
           env="PROBE_TOKEN=abcdefgh-probe-token\n")
    r = run_hermes(home_dir, "config", "check")
    assert r.returncode == 0, r.stderr
    shown = run_hermes(home_dir, "config", "show")
    assert "abcdefgh-probe-token" not in shown.stdout  # a secret like any other
    _write(home_dir, "gateway:\n  health: {host: '::1', port: 8765}\n" + SERVES)
    assert run_hermes(home_dir, "config", "check").returncode == 0


def test_gateway_run_refuses_a_world_readable_env_file(home_dir: Path) -> None:
    root = _write(home_dir, "gateway:\n  health: {port: 0}\n", env="OPENAI_API_KEY=sk-x\n")
    os.chmod(root / ".env", 0o644)
    r = run_hermes(home_dir, "gateway", "run")
    assert r.returncode == 78
    assert "chmod 600" in r.stderr and ".env" in r.stderr
    assert "sk-x" not in r.stderr
