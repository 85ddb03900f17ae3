"""`hermes gateway …`: run the daemon (service management lives in deploy commands)."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(help="Run and manage the gateway daemon.", no_args_is_help=True)


@app.command("run")
def run(
    replace: Annotated[
        bool, typer.Option("--replace", help="Take over from a gateway already running.")
    ] = False,
) -> None:
    """Run the gateway in the foreground until SIGTERM/SIGINT (exit 0) or SIGUSR1 (exit 75).

    Exit 78 on a configuration error, including a gateway already running for this profile
    and a profile with no platform enabled (a fresh one: see `hermes demo`).
    Ctrl-C twice exits at once (1); stored state is kept for the next start.
    """
    from gateway.cli.bootstrap import current, fail, load_config_or_exit, warn
    from gateway.config import EXIT_CONFIG
    from gateway.config.readiness import missing_message, missing_parts
    from gateway.eventloop import run as run_loop
    from gateway.instance import AlreadyRunning
    from gateway.logging import configure_from_config
    from gateway.paths import ensure_profile_dirs, paths
    from gateway.runner import GatewayRunner

    loaded = load_config_or_exit()
    for w in loaded.warnings:
        warn(w)
    missing = missing_parts(loaded.config)
    if missing:
        fail(missing_message(missing, str(loaded.config_file), loaded.config_found), EXIT_CONFIG)
    state = current()
    p = paths()
    ensure_profile_dirs(p)
    configure_from_config(loaded.config.logging, profile=state.profile)
    runner = GatewayRunner(loaded.config, p, replace=replace)
    try:
        code = run_loop(runner.run())
    except AlreadyRunning as exc:
        fail(f"{exc} (use --replace to take over)", EXIT_CONFIG)
    raise typer.Exit(code)
