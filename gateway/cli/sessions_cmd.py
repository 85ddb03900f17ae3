"""`hermes sessions list|show|search|export`.

Every command opens the profile's `state.db` (creating it when missing). `--json` prints one
machine-readable JSON document on stdout; without it people get rich tables. `search` exits
0 for any query text: a query with nothing searchable simply finds nothing.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from gateway.cli.bootstrap import EXIT_USAGE, fail, run_async
from gateway.cli.terminal import safe_text
from gateway.paths import paths

if TYPE_CHECKING:
    from storage import Session
    from storage.opening import AnyStore
    from storage.ports import HistoryReader

__all__ = ["app"]

app = typer.Typer(help="Browse, search and export stored sessions.", no_args_is_help=True)

T = TypeVar("T")
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


async def _open() -> AnyStore:
    from gateway.cli.bootstrap import load_config_or_exit
    from gateway.storage_backend import open_configured_store

    return await open_configured_store(load_config_or_exit().config, paths().state_db)


def _run(fn: Callable[[HistoryReader], Awaitable[T]]) -> T:
    async def main() -> T:
        store = await _open()
        try:
            return await fn(store)
        finally:
            await store.close()

    from storage import StorageError

    try:
        return run_async(main())
    except StorageError as exc:
        fail(f"state store error: {exc}")


def _when(ts: float | None) -> str:
    return "" if ts is None else datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _emit_json(data: Any) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def _session_summary(s: Session) -> dict[str, Any]:
    return {
        "id": s.id,
        "title": s.title,
        "source": s.source,
        "started_at": s.started_at,
        "ended_at": s.ended_at,
        "end_reason": s.end_reason,
        "parent_session_id": s.parent_session_id,
        "lineage_kind": s.lineage_kind,
        "message_count": s.message_count,
        "model": s.model,
        "last_activity": s.last_activity,
    }


async def _find(store: HistoryReader, ident: str) -> Session | None:
    """An exact id, else an exact title (that session itself, not its lineage tip)."""
    s = await store.get_session(ident)
    if s is not None:
        return s
    tip = await store.resolve(ident)
    if tip is None:
        return None
    for candidate in [tip, *await store.ancestors(tip.id)]:
        if candidate.title == ident.strip():
            return candidate
    return tip


@app.command("list")
def list_cmd(
    source: Annotated[str | None, typer.Option(help="Only this source/platform.")] = None,
    live: Annotated[bool, typer.Option("--live", help="Only sessions not ended.")] = False,
    limit: Annotated[int, typer.Option(min=1, max=10_000)] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Sessions, newest first."""
    sessions = _run(lambda st: st.list_sessions(source=source, live_only=live, limit=limit))
    if as_json:
        _emit_json([_session_summary(s) for s in sessions])
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(sessions)} session(s)")
    for col in ("id", "title", "source", "started", "msgs", "state"):
        table.add_column(col, overflow="fold")
    for s in sessions:
        state = "live" if s.ended_at is None else f"ended ({s.end_reason or '?'})"
        table.add_row(
            s.id, safe_text(s.title or ""), safe_text(s.source), _when(s.started_at),
            str(s.message_count), state,
        )
    Console().print(table)


@app.command()
def show(
    session: Annotated[str, typer.Argument(help="Session id or title.")],
    include_inactive: Annotated[
        bool, typer.Option("--all", help="Include rewound and compacted messages.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """One session: its details, lineage and messages."""

    async def load(st: HistoryReader) -> tuple[Session | None, list[dict[str, Any]], list[str]]:
        s = await _find(st, session)
        if s is None:
            return None, [], []
        msgs = await st.load_all(s.id, include_inactive=include_inactive)
        lineage = [a.id for a in reversed(await st.ancestors(s.id))]
        return s, msgs, lineage

    s, msgs, lineage = _run(load)
    if s is None:
        fail(f"no session with id or title {session!r}", EXIT_USAGE)
    if as_json:
        _emit_json({"session": s.to_dict(), "ancestors": lineage, "messages": msgs})
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    console.print(safe_text(f"{s.title or s.id}  ({s.id})", style="bold"))
    console.print(
        Text(
            f"source {s.source} · started {_when(s.started_at)} · "
            + ("live" if s.ended_at is None else f"ended {_when(s.ended_at)} ({s.end_reason})")
            + f" · tokens in/out {s.input_tokens}/{s.output_tokens}"
        )
    )
    if lineage:
        console.print(Text("lineage: " + " → ".join([*lineage, s.id])))
    table = Table(show_lines=False)
    for col in ("id", "role", "content"):
        table.add_column(col, overflow="fold")
    for m in msgs:
        text = m.get("content")
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False) if text is not None else ""
        if m.get("tool_calls"):
            names = [c.get("function", {}).get("name", "?") for c in m["tool_calls"]]
            text = (text + f"\n→ tool calls: {', '.join(names)}").strip()
        flag = "" if m.get("_active", True) else " (inactive)"
        table.add_row(str(m["_id"]), safe_text(m["role"] + flag), safe_text(text[:2000]))
    console.print(table)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="Words, \"phrases\", Chinese text, substrings.")],
    limit: Annotated[int, typer.Option(min=1, max=200)] = 20,
    source: Annotated[str | None, typer.Option(help="Only this source/platform.")] = None,
    session: Annotated[str | None, typer.Option(help="Only this session id.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Full-text search over stored messages (always exits 0)."""
    hits = _run(lambda st: st.search(query, limit=limit, source=source, session_id=session))
    if as_json:
        _emit_json([h.to_dict() for h in hits])
        return
    from rich.console import Console
    from rich.table import Table

    if not hits:
        Console().print("no matches")
        return
    table = Table(title=f"{len(hits)} match(es)")
    for col in ("session", "title", "when", "role", "snippet"):
        table.add_column(col, overflow="fold")
    for h in hits:
        table.add_row(
            safe_text(h.session_id), safe_text(h.session_title or ""), _when(h.timestamp),
            safe_text(h.role), safe_text(h.snippet)
        )
    Console().print(table)


def _markdown(s: Session, msgs: list[dict[str, Any]]) -> str:
    out = [f"# {s.title or s.id}", "", f"- id: `{s.id}`", f"- source: {s.source}",
           f"- started: {_when(s.started_at)}"]
    if s.parent_session_id:
        out.append(f"- parent: `{s.parent_session_id}`")
    out.append("")
    for m in msgs:
        content = m.get("content")
        if not isinstance(content, str):
            content = "" if content is None else json.dumps(content, ensure_ascii=False)
        head = f"## {m['role']}"
        if m.get("tool_name"):
            head += f" ({m['tool_name']})"
        out += [head, ""]
        if content:
            out += [content, ""]
        for call in m.get("tool_calls") or []:
            fn = call.get("function", {})
            out += [f"```tool-call {fn.get('name', '?')}", str(fn.get("arguments", "")), "```", ""]
    return "\n".join(out)


@app.command()
def export(
    session: Annotated[str, typer.Argument(help="Session id or title.")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl or md.")] = "jsonl",
    include_inactive: Annotated[
        bool, typer.Option("--all", help="Include rewound and compacted messages.")
    ] = False,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write to a file.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Export a session's messages as JSON lines (one message per line) or Markdown.

    With `--json`, prints one JSON document `{"session": ..., "messages": [...]}` instead."""
    if fmt not in ("jsonl", "md"):
        fail("--format must be jsonl or md", EXIT_USAGE)

    async def load(st: HistoryReader) -> tuple[Session | None, list[dict[str, Any]]]:
        s = await _find(st, session)
        if s is None:
            return None, []
        if include_inactive:
            return s, await st.load_all(s.id)
        return s, await st.load_history(s.id)

    s, msgs = _run(load)
    if s is None:
        fail(f"no session with id or title {session!r}", EXIT_USAGE)
    if as_json:
        text = json.dumps({"session": s.to_dict(), "messages": msgs}, ensure_ascii=False,
                          default=str)
    elif fmt == "jsonl":
        text = "\n".join(json.dumps(m, ensure_ascii=False, default=str) for m in msgs)
    else:
        text = _markdown(s, msgs)
    if output is not None:
        output.write_text(text + "\n", encoding="utf-8")
    else:
        typer.echo(text)
