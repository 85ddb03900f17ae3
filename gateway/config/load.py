"""Read `$HERMES_HOME/config.yaml` and `$HERMES_HOME/.env` into a validated `HermesConfig`.

Precedence (docs/configuration.md, "Precedence"):
1. `${VAR}` references are looked up in the process environment first, then in the profile's
   `.env`; `${VAR:-default}` falls back to its default when both are unset or empty.
2. `.env` never overrides a variable already set in the process environment
   (`apply_env_file`, called once at CLI entry, only fills in unset variables).
3. `config.yaml` values are literal unless they contain `${…}`: no environment variable
   overrides a config key implicitly.
A missing `config.yaml` means the embedded defaults.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gateway.config.envfile import apply_env_file, read_env_file
from gateway.config.errors import ConfigError, Problem, format_path
from gateway.config.expand import expand_env
from gateway.config.keys import problems_from, unknown_keys
from gateway.config.memory import validate_memory_providers
from gateway.config.models import HermesConfig
from gateway.config.platforms import validate_platforms
from gateway.config.redact import register_secrets
from gateway.paths import ProfilePaths, paths

__all__ = [
    "LoadedConfig",
    "apply_env_file",
    "load_config",
    "parse_config",
    "read_env_file",
]

@dataclass(frozen=True, slots=True)
class LoadedConfig:
    """A validated config plus what the loader noticed on the way."""

    config: HermesConfig
    warnings: list[str] = field(default_factory=list)
    config_file: Path | None = None
    config_found: bool = False
    env_file: Path | None = None
    env_vars: dict[str, list[str]] = field(default_factory=dict)
    """Variables referenced by `${…}` → the key paths that used them."""


def _warnings(data: Mapping[str, Any]) -> list[str]:
    """Unknown keys outside `platforms:` and `memory.providers:` (whose blocks are strict:
    see `validate_platforms`, `validate_memory_providers`)."""
    rest = {k: v for k, v in data.items() if k != "platforms"}
    memory = rest.get("memory")
    if isinstance(memory, Mapping) and "providers" in memory:
        rest["memory"] = {k: v for k, v in memory.items() if k != "providers"}
    return [f"unknown key {format_path(u.path)}{u.hint() or ' (ignored)'}"
            for u in unknown_keys(HermesConfig, rest)]


def parse_config(
    data: Any, *, env: Mapping[str, str], source: Path | None = None
) -> tuple[HermesConfig, list[str], dict[str, list[str]]]:
    """Validate parsed YAML `data` against the contract after `${VAR}` expansion from `env`.

    Each `platforms.<name>` block is validated by the settings model of the adapter of that
    name (found through the registry): an unknown platform or an unknown key in a block is an
    error with a "did you mean" hint. Unknown keys elsewhere are warnings.

    Returns (config, warnings, variables used). Raises `ConfigError` naming each key path.
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            Problem("(top level)", f"expected a mapping of sections, got {type(data).__name__}"),
            source,
        )
    try:
        expanded = expand_env(data, env)
    except ConfigError as exc:
        raise ConfigError(list(exc.problems), source) from None
    tree: dict[str, Any] = expanded.value
    warnings = _warnings(tree)
    agent = tree.get("agent")
    if isinstance(agent, Mapping) and agent.get("toolsets") is not None:
        warnings.append("agent.toolsets is deprecated: use tools.toolsets (and "
                        "platforms.<name>.toolsets); it applies only while tools.toolsets "
                        "is not set")
    blocks, problems = validate_platforms(tree.get("platforms"))
    memory = tree.get("memory")
    if isinstance(memory, Mapping) and memory.get("providers") is not None:
        providers, more = validate_memory_providers(memory.get("providers"))
        problems += more
        tree = {**tree, "memory": {**memory, "providers": providers}}
    try:
        cfg = HermesConfig.model_validate({**tree, "platforms": blocks})
    except ValidationError as exc:
        raise ConfigError(problems + problems_from(exc, tree), source) from None
    problems += cfg.problems()
    if problems:
        raise ConfigError(problems, source)
    return cfg, warnings, expanded.used


def _read_yaml(path: Path) -> Any:
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(Problem("(file)", f"cannot read: {type(exc).__name__}"), path) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(syntax)"
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(Problem(where, f"YAML syntax error: {problem}"), path) from None


def load_config(
    home: Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    register: bool = True,
) -> LoadedConfig:
    """Load and validate the config of the profile at `home` (default: the active profile).

    `environ` defaults to `os.environ`. With `register`, every secret value is registered for
    log redaction. Raises `ConfigError` (message names the key path and the problem, never a
    value) for YAML syntax errors, unset `${VAR}`, invalid values and broken cross-references.
    """
    p: ProfilePaths = paths(home)
    process = dict(os.environ if environ is None else environ)
    dotenv = read_env_file(p.env_file)
    lookup = {**dotenv, **process}
    raw = _read_yaml(p.config_file)
    cfg, warnings, used = parse_config(raw, env=lookup, source=p.config_file)
    for name in sorted(used):
        if name in dotenv and name in process and dotenv[name] != process[name]:
            warnings.append(
                f"{name}: the process environment overrides the value in {p.env_file.name}"
            )
    insecure = _env_file_exposure(p.env_file)
    if insecure and not cfg.security.allow_insecure_env:
        raise ConfigError(Problem(".env", f"{insecure}; run: chmod 600 {p.env_file} "
                                  "(or set security.allow_insecure_env: true)"), p.env_file)
    if insecure:
        warnings.append(f"{insecure} (allowed by security.allow_insecure_env); "
                        f"run: chmod 600 {p.env_file}")
    if register:
        register_secrets(cfg.secret_values())
    return LoadedConfig(
        config=cfg,
        warnings=warnings,
        config_file=p.config_file,
        config_found=raw is not None or p.config_file.is_file(),
        env_file=p.env_file,
        env_vars=used,
    )


def _env_file_exposure(path: Path) -> str | None:
    """Why the `.env` file (secrets) is exposed to other users, or None when it is not."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None
    if mode & 0o077:
        who = "other users" if mode & 0o007 else "its group"
        return f"{path.name} is readable or writable by {who} (mode {mode:04o})"
    return None
