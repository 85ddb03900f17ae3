"""`${VAR}` / `${VAR:-default}` expansion."""

from __future__ import annotations

import pytest

from gateway.config.errors import ConfigError
from gateway.config.expand import expand_env


def test_plain_and_default_forms() -> None:
    env = {"A": "alpha", "EMPTY": ""}
    out = expand_env(
        {
            "a": "${A}",
            "b": "pre-${A}-post",
            "c": "${MISSING:-fallback}",
            "d": "${EMPTY:-used-when-empty}",
            "e": "${EMPTY}",
            "f": "${MISSING:-}",
            "g": "${A:-ignored}",
        },
        env,
    ).value
    assert out == {
        "a": "alpha",
        "b": "pre-alpha-post",
        "c": "fallback",
        "d": "used-when-empty",
        "e": "",
        "f": "",
        "g": "alpha",
    }


def test_nested_lists_and_dicts_expand_everywhere() -> None:
    env = {"K1": "one", "K2": "two", "HOST": "example.org"}
    data = {
        "providers": {
            "main": {"api_keys": ["${K1}", "${K2}"], "base_url": "https://${HOST}/v1"},
        },
        "deep": [[{"x": "${K1}"}], ["${K2:-z}"]],
        "numbers": [1, 2.5, True, None],
    }
    out = expand_env(data, env).value
    assert out["providers"]["main"]["api_keys"] == ["one", "two"]
    assert out["providers"]["main"]["base_url"] == "https://example.org/v1"
    assert out["deep"] == [[{"x": "one"}], ["two"]]
    assert out["numbers"] == [1, 2.5, True, None]


def test_keys_are_not_expanded_and_escape_works() -> None:
    out = expand_env({"${A}": "$${A} costs $5", "b": "$HOME stays"}, {"A": "x"}).value
    assert out == {"${A}": "${A} costs $5", "b": "$HOME stays"}


def test_unset_variable_error_names_key_path() -> None:
    data = {"platforms": {"telegram": {"token": "${TELEGRAM_BOT_TOKEN}"}}}
    with pytest.raises(ConfigError) as err:
        expand_env(data, {})
    assert err.value.problems[0].path == "platforms.telegram.token"
    assert "TELEGRAM_BOT_TOKEN" in str(err.value)


def test_every_unset_variable_is_reported_with_list_indexes() -> None:
    data = {
        "providers": {"main": {"api_keys": ["${OK}", "${NOPE1}"]}},
        "platforms": {"slack": {"app_token": "${NOPE2}"}},
    }
    with pytest.raises(ConfigError) as err:
        expand_env(data, {"OK": "fine"})
    paths = [p.path for p in err.value.problems]
    assert paths == ["providers.main.api_keys[1]", "platforms.slack.app_token"]


def test_error_never_contains_values_of_other_variables() -> None:
    env = {"SECRET": "sk-live-abcdefghijklmnopqrstuvwxyz"}
    with pytest.raises(ConfigError) as err:
        expand_env({"a": "${SECRET}", "b": "${UNSET}"}, env)
    assert env["SECRET"] not in str(err.value)


def test_used_variables_are_recorded_by_path() -> None:
    result = expand_env({"a": {"b": "${V:-1}"}, "c": ["${V}"]}, {"V": "2"})
    assert result.used == {"V": ["a.b", "c[0]"]}
