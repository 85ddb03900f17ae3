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
    from gateway.cli.serve import serve

    raise typer.Exit(serve(replace=replace))
