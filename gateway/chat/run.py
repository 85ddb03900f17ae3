"""`hermes chat` end to end: find or start the gateway, connect, chat."""

from __future__ import annotations

import contextlib
import getpass
import io
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from rich.console import Console

from gateway.chat.client import ChatConnection, connect
from gateway.config.errors import EXIT_CONFIG

__all__ = ["run_chat"]


class ChatRefused(Exception):
    """The profile is held by a gateway that does not serve the terminal chat."""


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "operator"


@contextlib.asynccontextmanager
async def _connection(demo: bool, console: Console) -> AsyncIterator[tuple[ChatConnection, str]]:
    """A connection to the gateway that serves this profile's chat, and how it was found."""
    from gateway.chat.local import demo_gateway, local_gateway, socket_path

    user = _user()
    if demo:
        async with demo_gateway() as sock:
            conn = await connect(sock, user)
            try:
                yield conn, "demo: offline stand-in model, throwaway profile"
            finally:
                await conn.close()
        return
    from gateway.cli.bootstrap import current, load_config_or_exit
    from gateway.instance import AlreadyRunning
    from gateway.logging import configure_logging
    from gateway.paths import ensure_profile_dirs, paths

    loaded = load_config_or_exit()
    p = paths()
    sock = socket_path(p, loaded.config)
    remote: ChatConnection | None
    try:
        remote = await connect(sock, user)
    except OSError:
        remote = None
    if remote is not None:
        try:
            yield remote, f"connected to the running gateway ({sock})"
        finally:
            await remote.close()
        return
    from gateway.instance import running_pid

    holder = running_pid(p.root)
    if holder is not None:  # a gateway holds the profile and serves no chat socket
        raise ChatRefused(f"a gateway is already running for this profile (pid {holder})")
    ensure_profile_dirs(p)
    configure_logging(level=loaded.config.logging.level, fmt="json", log_dir=p.logs,
                      stream=io.StringIO(), profile=current().profile)
    try:
        gw = local_gateway(loaded.config, p)
        sock = await gw.__aenter__()
    except AlreadyRunning as exc:
        raise ChatRefused(str(exc)) from None
    try:
        conn = await connect(sock, user)
        try:
            yield conn, "no gateway runs on this profile: started one in this process"
        finally:
            await conn.close()
    finally:
        await gw.__aexit__(None, None, None)


async def _main(query: str | None, as_json: bool, resume: str | None, demo: bool) -> int:
    from gateway.chat.term import ask_once, interactive

    console = Console(stderr=False)
    async with _connection(demo, console) as (conn, how):
        if resume:
            answer = (await conn.turn(f"/resume {resume}", timeout_s=30)).text
            if not answer.startswith(("▶️", "That is already")):
                print(f"hermes: error: {answer}", file=sys.stderr)
                return 1
            if query is None:
                console.print(answer)
        if query is not None:
            return await ask_once(conn, query, as_json=as_json, console=console)
        from gateway.paths import paths

        history = paths().root / "chat_history" if not demo else Path("/dev/null")
        banner = (f"[bold]Hermes chat[/] · {how}\n"
                  "Type a message; /help lists commands; Tab completes; /exit leaves. "
                  "Ctrl-C stops a reply, twice exits.")
        return await interactive(conn, console, history, banner)


def run_chat(*, query: str | None, as_json: bool, resume: str | None, demo: bool) -> int:
    from gateway.eventloop import run as run_loop

    if as_json and query is None:
        print("hermes: error: --json needs -q QUESTION", file=sys.stderr)
        return 2
    try:
        return run_loop(_main(query, as_json, resume, demo))
    except ChatRefused as exc:
        print(f"hermes: error: {exc}. That gateway does not serve the terminal chat: set "
              "platforms.cli.enabled: true in its config.yaml and restart it, or stop it.",
              file=sys.stderr)
        return EXIT_CONFIG
    except ConnectionError as exc:
        print(f"hermes: error: {exc}", file=sys.stderr)
        return 1
