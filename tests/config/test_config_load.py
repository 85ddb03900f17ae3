"""Loading config.yaml + .env: precedence, validation errors, unknown-key warnings, and the
`platforms:` blocks validated by each adapter's own settings model."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gateway.config.envfile import apply_env_file
from gateway.config.errors import ConfigError
from gateway.config.load import load_config, parse_config
from gateway.config.redact import redact_text
from gateway.paths import ensure_profile_dirs, paths


def _profile(home_dir: Path, yaml_text: str = "", env_text: str | None = None) -> Path:
    root = home_dir / ".hermes"
    p = ensure_profile_dirs(paths(root))
    if yaml_text:
        p.config_file.write_text(yaml_text, encoding="utf-8")
    if env_text is not None:
        p.env_file.write_text(env_text, encoding="utf-8")
        os.chmod(p.env_file, 0o600)
    return root


def test_missing_config_gives_embedded_defaults(home_dir: Path) -> None:
    loaded = load_config(_profile(home_dir), environ={})
    cfg = loaded.config
    assert not loaded.config_found
    assert cfg.model.provider == "main" and cfg.model.max_iterations == 90
    assert cfg.model.subagent_max_iterations == 50
    assert cfg.compression.threshold_percent == 0.5
    assert cfg.compression.protect_first_n == 3 and cfg.compression.lease_seconds == 60
    assert cfg.gateway.busy_mode == "interrupt" and cfg.gateway.drain_timeout_s == 30
    assert cfg.gateway.health.port == 8765 and cfg.gateway.session_reset.daily_hour == 4
    assert cfg.platforms.enabled() == []


def test_process_env_beats_dotenv_and_dotenv_fills_gaps(home_dir: Path) -> None:
    root = _profile(
        home_dir,
        "providers:\n  main:\n    model: ${MODEL}\n    base_url: ${BASE}\n",
        env_text="MODEL=from-dotenv\nBASE=https://dotenv.example/v1\n",
    )
    loaded = load_config(root, environ={"MODEL": "from-process"})
    prov = loaded.config.provider()
    assert prov.model == "from-process"
    assert prov.base_url == "https://dotenv.example/v1"
    assert any("MODEL" in w and "overrides" in w for w in loaded.warnings)


def test_yaml_values_are_literal_without_reference(home_dir: Path) -> None:
    root = _profile(home_dir, "providers:\n  main:\n    model: literal-model\n")
    loaded = load_config(root, environ={"HERMES_MODEL": "env-model", "MODEL": "x"})
    assert loaded.config.provider().model == "literal-model"


def test_apply_env_file_never_overrides_process_env(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("A=dotenv\nB=dotenv\nHERMES_HOME=/elsewhere\n", encoding="utf-8")
    environ = {"A": "process"}
    added = apply_env_file(env_file, environ)
    assert environ == {"A": "process", "B": "dotenv"}
    assert added == ["B"]


def test_unknown_keys_warn_with_full_path(home_dir: Path) -> None:
    root = _profile(
        home_dir,
        "gateway:\n  busy_mod: queue\n  health: {prot: 1}\n"
        "providers:\n  main: {modle: m}\nbogus: 1\n",
    )
    loaded = load_config(root, environ={})
    text = "\n".join(loaded.warnings)
    assert "gateway.busy_mod" in text and "'busy_mode'" in text
    assert "gateway.health.prot" in text
    assert "providers.main.modle" in text
    assert "unknown key bogus" in text


def test_unknown_platform_key_is_an_error_with_a_hint(home_dir: Path) -> None:
    root = _profile(
        home_dir,
        "platforms:\n  telegram: {enabled: true, token: '1:x', tokn: x, webhook: {prot: 1}}\n"
        "  slack: {bot_tokn: x}\n",
    )
    with pytest.raises(ConfigError) as err:
        load_config(root, environ={})
    found = {p.path: p.message for p in err.value.problems}
    assert found == {
        "platforms.telegram.tokn": "unknown key (did you mean 'token'?)",
        "platforms.telegram.webhook.prot": "unknown key (did you mean 'port'?)",
        "platforms.slack.bot_tokn": "unknown key (did you mean 'bot_token'?)",
    }


def test_unknown_platform_lists_the_available_adapters(home_dir: Path) -> None:
    root = _profile(home_dir, "platforms:\n  telegarm: {enabled: true}\n")
    with pytest.raises(ConfigError) as err:
        load_config(root, environ={})
    (problem,) = err.value.problems
    assert problem.path == "platforms.telegarm"
    assert "did you mean 'telegram'?" in problem.message
    for name in ("api", "discord", "fake", "slack", "telegram"):
        assert name in problem.message


def test_platform_blocks_are_the_adapters_models() -> None:
    from adapters.api import ApiSettings
    from adapters.telegram import TelegramSettings

    cfg, _, _ = parse_config({"platforms": {
        "telegram": {"conflict_retries": 9},
        "api": {"max_body_bytes": 1024, "turn_timeout_s": 5, "keepalive_s": 2,
                "model_name": "house-model"}}}, env={})
    telegram, api = cfg.platforms["telegram"], cfg.platforms["api"]
    assert isinstance(telegram, TelegramSettings) and telegram.conflict_retries == 9
    assert isinstance(api, ApiSettings)
    assert (api.max_body_bytes, api.turn_timeout_s, api.keepalive_s, api.model_name) == (
        1024, 5, 2, "house-model")


@pytest.mark.parametrize(
    ("yaml_text", "path", "fragment"),
    [
        ("gateway:\n  busy_mode: sometimes\n", "gateway.busy_mode", "'interrupt'"),
        ("gateway:\n  health:\n    port: 70000\n", "gateway.health.port", "65535"),
        ("providers:\n  main:\n    base_url: ftp://x\n", "providers.main.base_url", "http"),
        ("providers:\n  main:\n    timeout_s: soon\n", "providers.main.timeout_s", "number"),
        ("compression:\n  mode: sideways\n", "compression.mode", "rotate"),
        ("platforms:\n  telegram:\n    enabled: true\n", "platforms.telegram.token", "required"),
        (
            "platforms:\n  slack: {enabled: true, bot_token: xoxb-1234567890-abc, mode: http}\n",
            "platforms.slack.signing_secret",
            "required",
        ),
        ("platforms:\n  api: {enabled: true}\n", "platforms.api.api_keys", "allow_all"),
        ("platforms:\n  api: {enabled: true, allowed_users: ['*'], api_keys: [k]}\n",
         "platforms.api.allowed_users", "allow_all: true"),
        ("platforms:\n  telegram: {conflict_retries: 0}\n", "platforms.telegram.conflict_retries",
         "greater than or equal to 1"),
        ("platforms:\n  api: {max_body_bytes: lots}\n", "platforms.api.max_body_bytes",
         "integer"),
        ("model:\n  provider: nowhere\n", "model.provider", "unknown provider"),
        ("model:\n  fallback: [main, gone]\n", "model.fallback[1]", "unknown provider"),
        ("agent:\n  toolsets: 5\n", "agent.toolsets", "list"),
    ],
)
def test_invalid_values_name_the_key_path(
    home_dir: Path, yaml_text: str, path: str, fragment: str
) -> None:
    root = _profile(home_dir, yaml_text)
    with pytest.raises(ConfigError) as err:
        load_config(root, environ={})
    paths_found = [p.path for p in err.value.problems]
    assert path in paths_found, str(err.value)
    assert fragment in str(err.value)


def test_yaml_syntax_error_names_line(home_dir: Path) -> None:
    root = _profile(home_dir, "gateway:\n  busy_mode: [queue\n  x: y\n")
    with pytest.raises(ConfigError) as err:
        load_config(root, environ={})
    assert "line" in err.value.problems[0].path
    assert "YAML syntax error" in str(err.value)


def test_top_level_must_be_mapping(home_dir: Path) -> None:
    root = _profile(home_dir, "- a\n- b\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(root, environ={})


def test_error_messages_never_contain_the_bad_value() -> None:
    secret = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
    with pytest.raises(ConfigError) as err:
        parse_config({"platforms": {"telegram": {"enabled": secret}}}, env={})
    assert secret not in str(err.value)
    assert err.value.problems[0].path == "platforms.telegram.enabled"


def test_coercions_user_ids_keys_and_ratio() -> None:
    cfg, _, _ = parse_config(
        {
            "gateway": {"allowed_users": [12345, "678"]},
            "platforms": {"telegram": {"allowed_users": "111, 222"}},
            "providers": {"main": {"api_keys": "sk-aaaaaaaaaaaa,sk-bbbbbbbbbbbb,"}},
            "compression": {"summary_target_ratio": 0.95, "model_thresholds": {"gpt-4": 0.7}},
            "logging": {"level": "debug"},
        },
        env={},
    )
    assert cfg.gateway.allowed_users == ["12345", "678"]
    assert cfg.platforms["telegram"].allowed_users == ["111", "222"]
    assert cfg.provider().keys() == ["sk-aaaaaaaaaaaa", "sk-bbbbbbbbbbbb"]
    assert cfg.compression.summary_target_ratio == 0.80
    assert cfg.compression.model_thresholds == {"gpt-4": 0.7}
    assert cfg.logging.level == "DEBUG"


def test_empty_expansion_means_unset_secret() -> None:
    cfg, _, _ = parse_config(
        {"platforms": {"telegram": {"token": "${TG:-}"}}}, env={}
    )
    assert cfg.platforms["telegram"].token is None


def test_loaded_secrets_are_registered_for_redaction(home_dir: Path) -> None:
    root = _profile(
        home_dir,
        "platforms:\n  discord: {enabled: true, token: '${DISCORD_TOKEN}'}\n",
        env_text="DISCORD_TOKEN=odd-shaped-discord-secret-42\n",
    )
    load_config(root, environ={})
    assert "odd-shaped-discord-secret-42" not in redact_text("sent odd-shaped-discord-secret-42")


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620])
def test_an_env_file_others_can_read_is_refused(home_dir: Path, mode: int) -> None:
    root = _profile(home_dir, env_text="X=1\n")
    os.chmod(paths(root).env_file, mode)
    with pytest.raises(ConfigError) as err:
        load_config(root, environ={})
    assert "chmod 600" in str(err.value) and ".env" in str(err.value)
    assert stat.S_IMODE(paths(root).env_file.stat().st_mode) == mode  # never changed for you


def test_an_insecure_env_file_may_be_allowed_explicitly(home_dir: Path) -> None:
    root = _profile(home_dir, "security: {allow_insecure_env: true}\n",
                    env_text="X=1\n")
    os.chmod(paths(root).env_file, 0o644)
    loaded = load_config(root, environ={})
    assert any("chmod 600" in w for w in loaded.warnings)
