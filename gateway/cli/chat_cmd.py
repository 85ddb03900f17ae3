"""`hermes chat`: talk to the agent in the terminal (a client of the `cli` adapter)."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["chat"]


def chat(
    query: Annotated[str | None, typer.Option(
        "-q", "--query", help="Ask once, print the reply and exit.")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="With -q: print the reply and the turn's token usage as JSON.")] = False,
    resume: Annotated[str | None, typer.Option(
        "--resume", help="Continue a stored session of this terminal (id or title).")] = None,
    demo: Annotated[bool, typer.Option(
        "--demo", help="Use the offline stand-in model in a throwaway profile.")] = False,
) -> None:
    """Chat with the agent: the same sessions, tools, slash commands and compression as every
    platform. Talks to the profile's running gateway when it serves `platforms.cli`;
    otherwise runs a chat-only gateway in this process (exit 78 if another gateway holds the
    profile without the cli adapter)."""
    from gateway.chat.run import run_chat

    raise typer.Exit(run_chat(query=query, as_json=as_json, resume=resume, demo=demo))
