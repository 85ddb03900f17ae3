"""`hermes demo`: the zero-setup demo (no tokens, no network beyond 127.0.0.1)."""

from __future__ import annotations

from typing import Annotated

import typer


def demo(
    keep: Annotated[bool, typer.Option(
        "--keep", help="Leave the demo gateway up after the script until Ctrl-C.")] = False,
) -> None:
    """Run the real gateway with an offline stand-in model and chat with it over HTTP."""
    from gateway.demo.run import run_demo

    raise typer.Exit(run_demo(keep=keep))
