"""`hermes` command line: the root app.

The profile home is resolved once here, in the root callback, before any sub-command reads a
path. Sub-command groups live in their own modules and are attached below; they import heavy
libraries (pydantic, structlog, SDKs) inside their commands so start-up stays fast.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

# Plain help (click's layout): typer's rich help panels cost about 40% of `hermes --help`
# (rich and its console, loaded for every help screen). TYPER_USE_RICH=1 brings them back.
os.environ.setdefault("TYPER_USE_RICH", "0")

import typer  # noqa: E402 - after the choice above, which typer reads on import

from gateway import __version__

app = typer.Typer(
    name="hermes",
    help="Hermes Gateway: an LLM agent behind Telegram, Slack, Discord and an HTTP API.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hermes {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    profile: Annotated[
        str | None, typer.Option("-p", "--profile", help="Profile to use for this command.")
    ] = None,
    log_format: Annotated[
        str | None,
        typer.Option("--log-format", help="Log format: json, console or auto (default: by TTY)."),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    from gateway.cli.bootstrap import bootstrap
    from hermes_common.lean import resume_collector

    resume_collector()  # paused for the imports by the entry point (gateway.cli.entry)
    bootstrap(profile=profile, log_format=log_format)


def _attach() -> None:
    import importlib

    from gateway.cli import config_cmd, gateway_cmd, pairing_cmd, profile_cmd

    app.add_typer(profile_cmd.app, name="profile")
    app.add_typer(config_cmd.app, name="config")
    from gateway.cli import service_cmd

    service_cmd.register(gateway_cmd.app)
    app.add_typer(gateway_cmd.app, name="gateway")
    app.add_typer(pairing_cmd.app, name="pairing")
    from gateway.cli import skills_cmd, storage_cmd

    app.add_typer(storage_cmd.app, name="storage")
    app.add_typer(skills_cmd.app, name="skills")
    from gateway.cli.demo_cmd import demo

    app.command("demo")(demo)
    from gateway.cli.chat_cmd import chat

    app.command("chat")(chat)
    try:
        sessions_cmd = importlib.import_module("gateway.cli.sessions_cmd")
    except ModuleNotFoundError as exc:  # only while that module is not written yet
        if exc.name != "gateway.cli.sessions_cmd":
            raise
    else:
        from gateway.cli import compress_cmd

        compress_cmd.register(sessions_cmd.app)
        app.add_typer(sessions_cmd.app, name="sessions")


_attach()


def run() -> None:
    """Console-script entry point (via `gateway.cli.entry`). Unexpected errors become one
    redacted line on stderr (exit 1); set HERMES_DEBUG=1 to see the traceback."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        from gateway.cli.bootstrap import unexpected_error

        sys.exit(unexpected_error(exc))
