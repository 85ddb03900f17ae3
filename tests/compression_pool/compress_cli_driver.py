"""Runs `gateway.cli.compress_cmd` as its own process (`python compress_cli_driver.py compress
ID --json`), as `hermes sessions compress` will once the lead attaches it."""

from __future__ import annotations

import typer

from gateway.cli.compress_cmd import register

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@app.callback()
def _root() -> None:
    """Test driver."""


register(app)

if __name__ == "__main__":
    app()
