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

import difflib
import os
import stat
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gateway.config.envfile import apply_env_file, read_env_file
from gateway.config.errors import ConfigError, Problem, format_path
from gateway.config.expand import expand_env
from gateway.config.models import HermesConfig
from gateway.config.platforms import PlatformsConfig
from gateway.config.redact import redact_text, register_secrets
from gateway.paths import ProfilePaths, paths

__all__ = [
    "LoadedConfig",
    "apply_env_file",
    "load_config",
    "parse_config",
    "read_env_file",
    "unknown_keys",
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


def _unwrap(ann: Any) -> list[Any]:
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(ann)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for a in typing.get_args(ann) for t in _unwrap(a)]
    return [ann]


def _walk(ann: Any, value: Any, path: tuple[str | int, ...]) -> list[str]:
    out: list[str] = []
    for t in _unwrap(ann):
        origin = typing.get_origin(t)
        if isinstance(t, type) and issubclass(t, BaseModel) and isinstance(value, dict):
            return unknown_keys(t, value, path)
        if origin is dict and isinstance(value, dict):
            vt = typing.get_args(t)[1] if typing.get_args(t) else Any
            for k, v in value.items():
                out += _walk(vt, v, (*path, str(k)))
            return out
        if origin is list and isinstance(value, list):
            it = typing.get_args(t)[0] if typing.get_args(t) else Any
            for i, v in enumerate(value):
                out += _walk(it, v, (*path, i))
            return out
    return out


def unknown_keys(
    model: type[BaseModel], data: Mapping[str, Any], path: tuple[str | int, ...] = ()
) -> list[str]:
    """Warnings naming every key of `data` that `model` does not define, with full paths."""
    fields = model.model_fields
    by_name = {name: f for name, f in fields.items()}
    by_name.update({f.alias: f for f in fields.values() if f.alias})
    out: list[str] = []
    for key, value in data.items():
        f = by_name.get(str(key))
        here = (*path, str(key))
        if f is None:
            msg = f"unknown key {format_path(here)}"
            if model is PlatformsConfig:
                msg += " (not a built-in platform; kept for a plugin adapter)"
            else:
                close = difflib.get_close_matches(str(key), list(fields), n=1)
                msg += f" (did you mean {close[0]!r}?)" if close else " (ignored)"
            out.append(msg)
            continue
        out += _walk(f.annotation, value, here)
    return out


def _error_path(data: Any, loc: tuple[Any, ...]) -> str:
    """The part of a pydantic `loc` that names real keys (drops union/validator tags)."""
    real: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and str(part) in {str(k) for k in node}:
            key = next(k for k in node if str(k) == str(part))
            real.append(str(part))
            node = node[key]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            real.append(part)
            node = node[part]
        elif isinstance(part, str) and node is None and not real:
            real.append(part)
        else:
            break
    return format_path(real)


def _problems_from(exc: ValidationError, data: Any) -> list[Problem]:
    out: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    for err in exc.errors(include_url=False, include_input=False, include_context=False):
        path = _error_path(data, tuple(err["loc"]))
        msg = str(err["msg"]).removeprefix("Value error, ")
        if (path, msg) not in seen:
            seen.add((path, msg))
            out.append(Problem(path, redact_text(msg)))
    return out


def parse_config(
    data: Any, *, env: Mapping[str, str], source: Path | None = None
) -> tuple[HermesConfig, list[str], dict[str, list[str]]]:
    """Validate parsed YAML `data` against the contract after `${VAR}` expansion from `env`.

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
    warnings = unknown_keys(HermesConfig, expanded.value)
    try:
        cfg = HermesConfig.model_validate(expanded.value)
    except ValidationError as exc:
        raise ConfigError(_problems_from(exc, expanded.value), source) from None
    problems = cfg.problems()
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
    warnings += _env_file_mode_warning(p.env_file)
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


def _env_file_mode_warning(path: Path) -> list[str]:
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return []
    if mode & 0o077:
        return [f"{path} is readable by other users (mode {mode:04o}); run: chmod 600 {path}"]
    return []
