"""The adapter's settings are the validated config model (SecretStr); secrets stay hidden."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.telegram import TelegramSettings
from adapters.telegram.adapter import TelegramAdapter
from gateway.config.load import load_config, parse_config
from gateway.ports import AdapterError
from gateway.registry import create_adapter
from hermes_common.settings import reveal
from tests.telegram.fake_bot_api import FakeBotApi
from tests.telegram.helpers import Recorder


def test_settings_from_config_model_and_entry_point() -> None:
    config = parse_config({
        "providers": {"main": {"base_url": "http://127.0.0.1:1/v1", "api_keys": ["k"],
                               "model": "m"}},
        "platforms": {"telegram": {
            "enabled": True, "token": "111:AAA-secret", "mode": "webhook",
            "base_url": "http://127.0.0.1:8081/bot", "base_file_url": "http://127.0.0.1:8081/file/bot",
            "poll_timeout_s": 10,
            "webhook": {"url": "https://example.invalid/hook", "secret_token": "whsec"}}},
    }, env={})[0]
    adapter = create_adapter("telegram", config.platforms["telegram"])
    assert isinstance(adapter, TelegramAdapter)
    s = adapter.settings
    assert s is config.platforms["telegram"]
    assert (s.plain_token(), s.mode, s.base_url, reveal(s.webhook.secret_token)) == (
        "111:AAA-secret", "webhook", "http://127.0.0.1:8081/bot", "whsec")
    assert s.credential() == "111:AAA-secret"
    assert "AAA-secret" not in repr(s) and "whsec" not in repr(s)
    assert adapter.capabilities.dialect == "telegram_html"
    assert adapter.capabilities.length_measure == "utf16"
    assert adapter.capabilities.max_length == 4096
    assert "Telegram" in adapter.format_hint


def test_polling_liveness_window_exceeds_the_poll_timeout() -> None:
    s = TelegramSettings(token="1:x", poll_timeout_s=50)
    assert TelegramAdapter("telegram", s).capabilities.liveness_window_s > 50


async def test_conflict_retries_from_config_yaml_is_what_the_adapter_uses(
    api: FakeBotApi, rec: Recorder, tmp_path: Path
) -> None:
    """`conflict_retries: 9` used to arrive as 5 (the hand parser never saw the key)."""
    home = tmp_path / "profile"
    home.mkdir()
    (home / "config.yaml").write_text(
        "platforms:\n  telegram:\n    enabled: true\n"
        f"    token: '{api.token}'\n    base_url: {api.base_url}\n"
        f"    base_file_url: {api.base_file_url}\n"
        "    conflict_retries: 9\n    conflict_backoff_s: 0.001\n", encoding="utf-8")
    config = load_config(home, environ={}, register=False).config
    adapter = create_adapter("telegram", config.platforms["telegram"])
    assert isinstance(adapter, TelegramAdapter)
    assert adapter.settings.conflict_retries == 9
    api.conflicts_next = 1000
    with pytest.raises(AdapterError, match="409"):
        await adapter.start(rec.context())
    assert len(api.calls_of("getUpdates")) == 9
