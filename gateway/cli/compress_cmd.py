"""`hermes sessions compress ID [--focus TEXT] [--preview] [--json]` (DESIGN.md §7).

Runs ONE compression job through the same pool, durable lease and commit fence as the
gateway, so it is safe whether or not a gateway runs. Exit 0 with status `compressed` (or
`preview`); exit 3 with `deferred`, `noop`, `timeout`, `lease_lost` or `superseded` (nothing
was written); 1 on errors (`failed`, `not_found`, …); 78 for a configuration error.
Attach with `register(app)` (command name "compress").
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from gateway.compression import JobOutcome
    from gateway.config.models import HermesConfig

__all__ = ["EXIT_NOTHING_WRITTEN", "compress", "exit_code", "register"]

EXIT_NOTHING_WRITTEN = 3
EXIT_ERROR = 1


def exit_code(status: str) -> int:
    """The process exit code for a job status (DESIGN.md §7)."""
    from gateway.compression import NOTHING_WRITTEN

    if status in ("compressed", "preview"):
        return 0
    if status in NOTHING_WRITTEN:
        return EXIT_NOTHING_WRITTEN
    return EXIT_ERROR


async def _run(
    config: HermesConfig, ident: str, focus: str | None, preview: bool
) -> JobOutcome:
    from gateway.compression import JobOutcome, build_compression
    from gateway.paths import paths
    from gateway.storage_backend import open_configured_store

    store = await open_configured_store(config, paths().state_db)
    try:
        session = await store.get_session(ident) or await store.resolve(ident)
        if session is None:
            return JobOutcome("not_found", ident, detail="no session with this id or title")
        service = build_compression(config, store)
        try:
            return await service.compress_now(session.id, force=True, focus=focus,
                                              preview=preview)
        finally:
            await service.close()
    finally:
        await store.close()


def _human(out: JobOutcome) -> str:
    if out.status == "compressed":
        where = f" → {out.child_session_id}" if out.child_session_id else " (in place)"
        tokens = (f" (~{out.tokens_before:,} → ~{out.tokens_after:,} tokens)"
                  if out.tokens_before and out.tokens_after else "")
        return f"compressed {out.session_id}{where}{tokens}"
    detail = f": {out.detail}" if out.detail else ""
    return f"{out.status} {out.session_id}{detail}"


def compress(
    session_id: Annotated[str, typer.Argument(help="Session id (or exact title).")],
    focus: Annotated[
        str | None, typer.Option("--focus", help="Topic the summary should keep in detail.")
    ] = None,
    preview: Annotated[
        bool, typer.Option("--preview", help="Report what would happen; change nothing.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help='Print {"status", "session_id", "child_session_id"}.')
    ] = False,
) -> None:
    """Compress a session now (forced), through the same lease and commit fence as the
    gateway. Exit 0 when compressed, 3 when nothing was written, 1 on errors."""
    from gateway.cli.bootstrap import load_config_or_exit, run_async
    from gateway.config.redact import redact_text
    from gateway.logging import configure_logging, is_configured

    loaded = load_config_or_exit()
    if not is_configured():
        configure_logging(level="WARNING")
    out = run_async(_run(loaded.config, session_id, focus, preview))
    if as_json:
        typer.echo(json.dumps({"status": out.status, "session_id": out.session_id,
                               "child_session_id": out.child_session_id}))
    else:
        typer.echo(redact_text(_human(out)))
        if out.status == "compressed" and out.summary_preview:
            typer.echo(redact_text(out.summary_preview))
    raise typer.Exit(exit_code(out.status))


def register(app: typer.Typer) -> None:
    """Add `compress` to a typer app (the lead attaches it under `hermes sessions`)."""
    app.command("compress")(compress)
