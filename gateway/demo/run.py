"""`hermes demo`: the gateway's main job on embedded defaults, offline, in a throwaway profile.

Starts the real `GatewayRunner` with the `api` adapter on 127.0.0.1 and the offline stand-in
model, then talks to it through the real `openai` SDK over HTTP: a streamed reply, a tool call,
a local page read with `web_extract` (a news site on 127.0.0.1, allow-listed), slash commands,
a tool of a local MCP server (`gateway.demo.mcp_server`, started over stdio), a compression
that rotates the session into a child, and a skill the agent saves (`skill_manage`) and, after
`/new`, loads in the next session (`skill_view`) to answer from it. Prints the transcript, the
session lineage read back from state.db and the skills on disk with who wrote them.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from gateway.demo.site import NewsSite
from gateway.demo.standin import MODEL_NAME, StandInModel
from gateway.eventloop import run as run_loop

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from gateway.runner import GatewayRunner
    from storage.ports import HistoryReader

__all__ = ["run_demo"]

API_KEY = "demo-local-key"
SESSION = "demo-user"
SCRIPT = [
    "Hi Hermes! What are you?",
    "Please save a note: the demo works offline",
    "Read {news_url} and tell me the headlines",
    "What's in the news today? Classify it and add a short analysis.",
    "Tell me about streaming.",
    "And about sessions?",
    "How do tools work?",
    "Thanks, that helps.",
    "/status",
    "/compress here 1",
    "/status",
    "What did we talk about so far?",
    "Release version 1.2 of the app and save the steps as a skill.",
    "/new",
    "How do I release version 1.3?",
]


def _config(model_url: str) -> dict[str, Any]:
    return {
        "providers": {"main": {"base_url": model_url, "api_keys": ["offline-standin"],
                               "model": MODEL_NAME, "context_length": 16000,
                               "timeout_s": 30, "max_retries": 0}},
        "platforms": {"api": {"enabled": True, "host": "127.0.0.1", "port": 0,
                              "api_keys": [API_KEY]}},
        "gateway": {"health": {"port": 0}, "streaming": {"edit_interval_s": 0.2}},
        "compression": {"protect_first_n": 1},
        # The local news page is on 127.0.0.1: allow-listed, or web_extract would refuse it.
        "tools": {"web": {"allow_private": ["127.0.0.1/32"], "fetch": {"condense": False}}},
        "dashboard": {"enabled": True, "host": "127.0.0.1", "port": 0},
        "logging": {"level": "WARNING", "file": {"enabled": True}},
        "mcp_servers": _mcp_servers(),
    }


def _mcp_servers() -> dict[str, Any]:
    """The demo's local MCP server (stdio), when the MCP client is installed."""
    if importlib.util.find_spec("mcp") is None:
        return {}
    return {"news": {"command": sys.executable, "args": ["-m", "gateway.demo.mcp_server"],
                     "timeout_s": 20}}


async def _chat(client: AsyncOpenAI, text: str, console: Console) -> str:
    console.print(f"[bold cyan]you ›[/] {text}")
    console.print("[bold green]bot ›[/] ", end="")
    out: list[str] = []
    stream = await client.chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": text}],
        user=SESSION, stream=True)
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            piece = chunk.choices[0].delta.content
            out.append(piece)
            console.print(piece, end="", markup=False, highlight=False)
    console.print()
    return "".join(out)


async def _wait_for_ctrl_c(console: Console, urls: str) -> None:
    """`--keep`: leave the demo gateway up until Ctrl-C (or SIGTERM)."""
    import asyncio
    import signal

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    console.print(Panel.fit(urls + "\nPress Ctrl-C to stop the demo gateway.",
                            title="The demo gateway stays up (--keep)"))
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def _demo(home: Path, console: Console, keep: bool = False) -> int:
    from openai import AsyncOpenAI

    from gateway.config.load import load_config
    from gateway.paths import ensure_profile_dirs, paths
    from gateway.runner import GatewayRunner

    async with StandInModel() as model, NewsSite() as site:
        (home / "config.yaml").write_text(yaml.safe_dump(_config(model.base_url)))
        cfg = load_config(home).config
        runner = GatewayRunner(cfg, ensure_profile_dirs(paths(home)), health_port=0)
        started = time.monotonic()
        await runner.start()
        try:
            bound = runner.adapters["api"].listening()
            assert bound is not None, "the api adapter is connected, so it listens"
            port = bound[1]
            console.print(Panel.fit(
                f"Gateway ready in {time.monotonic() - started:.2f}s · API on "
                f"http://127.0.0.1:{port}/v1 · health on {runner.health.url if runner.health else '-'}"
                f"\nDashboard: {runner.dashboard.url if runner.dashboard else '-'}"
                f"\nProfile (throwaway): {home}\nModel: {MODEL_NAME} (offline stand-in, "
                "no network, no tokens)", title="Hermes Gateway demo"))
            client = AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=API_KEY,
                                 max_retries=0, timeout=60)
            for line in SCRIPT:
                await _chat(client, line.format(news_url=site.url), console)
            await client.close()
            await _show_state(runner.store, home, console)
            if keep:
                await _wait_for_ctrl_c(console, _urls(runner, port))
        finally:
            await runner.shutdown()
    return 0


def _urls(runner: GatewayRunner, port: int) -> str:
    lines = [f"API: http://127.0.0.1:{port}/v1 (key {API_KEY})"]
    if runner.health is not None:
        lines.append(f"Health: {runner.health.url}")
    if runner.dashboard is not None:
        lines.append(f"Dashboard: {runner.dashboard.url} (open it in a browser)")
    return "\n".join(lines)


async def _show_state(store: HistoryReader, home: Path, console: Console) -> None:
    sessions = await store.list_sessions(limit=10)
    table = Table(title="Sessions in state.db (lineage)")
    for col in ("id", "title", "parent", "end reason", "messages"):
        table.add_column(col)
    for s in reversed(sessions):
        table.add_row(s.id, s.title or "", s.parent_session_id or "—", s.end_reason or "live",
                      str(s.message_count))
    console.print(table)
    rotated = next((s for s in sessions if s.parent_session_id), None)
    if rotated is not None:  # the compression child and its parent
        chain = [rotated.id] + [a.id for a in await store.ancestors(rotated.id)]
        console.print("Lineage (newest first): " + " ← ".join(chain))
    live = next((s for s in sessions if s.ended_at is None), None)
    if live is not None:
        body = Text()
        for m in await store.load_history(live.id):
            body.append(f"{m['role']:>9} ", style="bold")
            body.append(str(m.get("content") or "")[:160].replace("\n", " ") + "\n")
        console.print(Panel(body, title=f"Active history of {live.id}"))
    calls = []
    for s in sessions:
        for m in await store.load_all(s.id):
            for c in m.get("tool_calls") or []:
                calls.append(f"{c['function']['name']}({c['function']['arguments']})")
    console.print("Tool calls recorded in state.db: " + ("; ".join(calls) or "none"))
    hits = await store.search("note")
    console.print(f"Search for “note” finds {len(hits)} message(s), compacted ones included.")
    note = home / "workspace" / "notes.txt"
    if note.exists():
        console.print(f"The tool wrote {note}: {note.read_text().strip()!r}")
    _show_skills(home, console)


def _show_skills(home: Path, console: Console) -> None:
    """The skills on disk, and who wrote each (the audit log beside them)."""
    from agent_core.skills import SkillStore

    store = SkillStore(home / "skills")
    for entry in store.scan():
        writes = ", ".join(f"{h['action']} by {h['principal']}" for h in store.history(entry.name))
        console.print(f"Skill on disk: {entry.qualified} ({writes or 'not written here'})",
                      markup=False, emoji=False, highlight=False)


def run_demo(keep: bool = False) -> int:
    """Run the demo; returns the process exit code. `keep`: leave the demo gateway up after
    the script until Ctrl-C, so its API (and dashboard) can be tried by hand; the throwaway
    profile is removed afterwards all the same."""
    console = Console()
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    tmp = tempfile.mkdtemp(prefix="hermes-demo-")
    home = Path(tmp)
    from gateway.logging import configure_logging

    # Logs go to the throwaway profile's logs/; the console shows the conversation.
    configure_logging(level="WARNING", fmt="json", log_dir=home / "logs", stream=io.StringIO(),
                      profile="demo")
    try:
        return run_loop(_demo(home, console, keep))
    finally:
        import shutil

        shutil.rmtree(home, ignore_errors=True)
