"""Redaction for `hermes config show`, and the config package's names for the project's one
redaction module (`hermes_common.redact`: known secret shapes plus every registered value).

The config loader registers every configured secret (`register_secrets`); `redacted_config`
also hides the values of secret-named environment variables (`OPENAI_API_KEY`, …), whether or
not the config refers to them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from hermes_common.redact import (
    REDACTED,
    clear_registered_secrets,
    redact_value,
    register_secret,
    register_secrets,
    secret_env_values,
)
from hermes_common.redact import is_secret_name as is_secret_key
from hermes_common.redact import redact as redact_text

__all__ = [
    "REDACTED",
    "clear_registered_secrets",
    "is_secret_key",
    "redact_text",
    "redact_value",
    "redacted_config",
    "register_secret",
    "register_secrets",
]


def redacted_config(config: Any, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The effective config (a pydantic model) as plain data: values under secret-named keys
    replaced entirely, every other string redacted (registered secrets, the values of the
    secret-named variables of `environ` (default `os.environ`), known secret shapes)."""
    data = config.model_dump(mode="python", by_alias=True)
    env_secrets = secret_env_values(os.environ if environ is None else environ)
    plain: dict[str, Any] = _plain(redact_value(data, secrets=env_secrets))
    return plain


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)
