"""Configuration: pydantic models of the contract, loading, `${VAR}` expansion, redaction.

Attributes are imported lazily so that `gateway.config.redact` / `.errors` stay cheap to
import (the CLI and the logging pipeline need them at start-up; pydantic is not needed then).

Public surface: `HermesConfig` (and the section models in `gateway.config.models`),
`load_config(home=None) -> LoadedConfig`, `ConfigError`, `EXIT_CONFIG`, `expand_env`,
`redacted_config`, `redact_text`, `register_secret`, `reveal`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the type checker sees the real names; at run time they load lazily
    from gateway.config.base import reveal
    from gateway.config.envfile import apply_env_file
    from gateway.config.errors import EXIT_CONFIG, EXIT_RESTART, ConfigError, Problem
    from gateway.config.expand import expand_env
    from gateway.config.load import LoadedConfig, load_config, parse_config
    from gateway.config.models import HermesConfig
    from gateway.config.redact import redact_text, redacted_config, register_secret

__all__ = [
    "EXIT_CONFIG",
    "EXIT_RESTART",
    "ConfigError",
    "HermesConfig",
    "LoadedConfig",
    "Problem",
    "apply_env_file",
    "expand_env",
    "load_config",
    "parse_config",
    "redact_text",
    "redacted_config",
    "register_secret",
    "reveal",
]

_WHERE = {
    "EXIT_CONFIG": "errors",
    "EXIT_RESTART": "errors",
    "ConfigError": "errors",
    "Problem": "errors",
    "HermesConfig": "models",
    "reveal": "base",
    "LoadedConfig": "load",
    "apply_env_file": "envfile",
    "load_config": "load",
    "parse_config": "load",
    "expand_env": "expand",
    "redact_text": "redact",
    "redacted_config": "redact",
    "register_secret": "redact",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'gateway.config' has no attribute {name!r}")
    return getattr(importlib.import_module(f"gateway.config.{module}"), name)
