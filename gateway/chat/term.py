"""The terminal side of `hermes chat`: the prompt (history, slash completion), the streamed
reply rendered as Markdown, tool calls as one-line progress, Ctrl-C handling."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

from gateway.chat.client import ChatConnection, TurnResult

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession

__all__ = ["ask_once", "interactive", "slash_words"]

EXIT_WORDS = ("/exit", "/quit")
_TOKENS = re.compile(r"Tokens so far: ([\d,]+) in, ([\d,]+) out")
_SESSION = re.compile(r"Session: (\S+)")


def slash_words() -> list[str]:
    """Every slash command the gateway knows (and /exit), for completion."""
    from gateway.commands.builtin import builtin_registry

    names = [f"/{c.name}" for c in builtin_registry()]
    return sorted(set(names) | set(EXIT_WORDS))


def _markdown(lines: list[str]) -> Markdown:
    """Markdown that keeps the line breaks of plain replies (e.g. /status) outside code."""
    text = "\n".join(lines)
    return Markdown(text if "```" in text else text.replace("\n", "  \n"))


def render(result: TurnResult) -> RenderableType:
    """Tool progress lines (🔧) dim, one line each; the rest as Markdown."""
    parts: list[RenderableType] = []
    for text in result.messages.values():
        prose: list[str] = []
        for line in text.splitlines():
            if line.startswith("🔧"):
                if prose:
                    parts.append(_markdown(prose))
                    prose = []
                parts.append(Text(line, style="dim"))
            else:
                prose.append(line)
        if any(p.strip() for p in prose):
            parts.append(_markdown(prose))
    return Group(*parts)


async def _usage(conn: ChatConnection) -> tuple[str | None, int, int]:
    """(session id, input tokens, output tokens) from `/status` (the same command a user
    types; the counters the gateway keeps per session)."""
    status = (await conn.turn("/status", timeout_s=30)).text
    tokens = _TOKENS.search(status)
    session = _SESSION.search(status)
    tin, tout = ((int(tokens.group(1).replace(",", "")), int(tokens.group(2).replace(",", "")))
                 if tokens else (0, 0))
    return (session.group(1) if session else None), tin, tout


async def ask_once(conn: ChatConnection, question: str, *, as_json: bool,
                   console: Console) -> int:
    """`hermes chat -q`: one message, the reply on stdout; exit 0, or 1 when it failed."""
    before = await _usage(conn) if as_json else (None, 0, 0)
    result = await conn.turn(question)
    if as_json:
        sid, tin, tout = await _usage(conn)
        same = sid == before[0]
        print(json.dumps({
            "reply": result.text, "ok": result.ok, "error": result.error, "session": sid,
            "usage": {"input_tokens": tin - (before[1] if same else 0),
                      "output_tokens": tout - (before[2] if same else 0)},
        }, ensure_ascii=False))
    else:
        console.print(render(result))
    return 0 if result.ok else 1


async def _one_turn(conn: ChatConnection, text: str, console: Console) -> bool:
    """Run one turn with a live view. Returns False when the user pressed Ctrl-C twice."""
    loop = asyncio.get_running_loop()
    interrupt = asyncio.Event()
    leave = asyncio.Event()

    def on_sigint() -> None:
        if interrupt.is_set():
            leave.set()
        else:
            interrupt.set()

    loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        with Live(Text("…", style="dim"), console=console, refresh_per_second=12,
                  transient=False) as live:
            turn = asyncio.ensure_future(conn.turn(
                text, lambda r: live.update(render(r)), interrupt=interrupt))
            quit_wait = asyncio.ensure_future(leave.wait())
            done, _ = await asyncio.wait({turn, quit_wait}, return_when=asyncio.FIRST_COMPLETED)
            quit_wait.cancel()
            if turn not in done:
                turn.cancel()
                return False
            result = turn.result()
            live.update(render(result))
        if result.interrupted:
            console.print("[yellow]⏹ interrupted[/] (Ctrl-C again while a reply runs exits)")
        elif not result.ok and result.error:
            console.print(f"[red]{result.error}[/]")
        return True
    finally:
        loop.remove_signal_handler(signal.SIGINT)


async def interactive(conn: ChatConnection, console: Console, history_file: Path,
                      banner: str) -> int:
    """The chat loop: prompt, send, show; `/exit`, Ctrl-D or Ctrl-C twice leave."""
    from prompt_toolkit import PromptSession  # noqa: F811 - the runtime import
    from prompt_toolkit.completion import WordCompleter
    from prompt_toolkit.history import FileHistory

    history_file.parent.mkdir(parents=True, exist_ok=True)
    session: PromptSession[str] = PromptSession(
        history=FileHistory(str(history_file)),
        completer=WordCompleter(slash_words(), sentence=True, match_middle=False),
        complete_while_typing=True)
    console.print(banner)
    armed = False
    while True:
        try:
            line = await _prompt(session)
        except KeyboardInterrupt:
            if armed:
                return 0
            armed = True
            console.print("[dim](Ctrl-C again, /exit or Ctrl-D to leave)[/]")
            continue
        except EOFError:
            return 0
        armed = False
        text = line.strip()
        if not text:
            continue
        if text in EXIT_WORDS:
            return 0
        with contextlib.suppress(asyncio.CancelledError):
            if not await _one_turn(conn, text, console):
                return 130


async def _prompt(session: PromptSession[str]) -> str:
    """One line from the prompt. A Ctrl-C that arrives as a signal (the terminal not yet, or
    no longer, in raw mode: typed just as the prompt is drawn) ends the prompt like the Ctrl-C
    key, so pressing it twice leaves cleanly whatever the timing. (The prompt is awaited
    here, not in a task of its own: a task that raises KeyboardInterrupt stops the loop.)"""
    loop = asyncio.get_running_loop()

    def on_sigint() -> None:
        if session.app.is_running:
            session.app.exit(exception=KeyboardInterrupt())

    loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        return await session.prompt_async("you › ")
    finally:
        loop.remove_signal_handler(signal.SIGINT)
