"""`hermes config show|check|path`."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from gateway.cli.bootstrap import load_config_or_exit as _load
from gateway.cli.bootstrap import warn
from gateway.config.errors import EXIT_CONFIG

__all__ = ["app"]

app = typer.Typer(help="Show or check the active profile's configuration.", no_args_is_help=True)


@app.command()
def show(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of YAML.")] = False,
) -> None:
    """Print the effective configuration (defaults filled in, ${VAR} expanded) with every
    secret redacted."""
    from gateway.config.redact import redacted_config

    loaded = _load()
    for w in loaded.warnings:
        warn(w)
    data = redacted_config(loaded.config)
    if as_json:
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    import yaml

    typer.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip())


@app.command()
def check(
    strict: Annotated[
        bool, typer.Option("--strict", help="Treat warnings (e.g. unknown keys) as errors.")
    ] = False,
) -> None:
    """Validate the configuration: exit 0 when usable, 78 naming each key path and problem."""
    loaded = _load()
    for w in loaded.warnings:
        warn(w)
    if strict and loaded.warnings:
        typer.echo(
            f"hermes: config error: {len(loaded.warnings)} warning(s) with --strict", err=True
        )
        raise typer.Exit(EXIT_CONFIG)
    cfg = loaded.config
    if loaded.config_found:
        where = str(loaded.config_file)
    else:
        where = f"no {loaded.config_file} (built-in defaults)"
    from gateway.config.readiness import missing_message, missing_parts

    missing = missing_parts(cfg)
    if missing:
        typer.echo("hermes: config error: " + missing_message(
            missing, str(loaded.config_file), loaded.config_found), err=True)
        raise typer.Exit(EXIT_CONFIG)
    enabled = ", ".join(cfg.platforms.enabled())
    typer.echo(f"config OK: {where}; platforms enabled: {enabled}")


@app.command()
def path() -> None:
    """Print the path of the active profile's config.yaml."""
    from gateway.paths import paths

    typer.echo(str(paths().config_file))
