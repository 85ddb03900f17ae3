"""`hermes storage migrate`: copy the profile's store between SQLite and PostgreSQL.

`--to postgres --dsn URI` copies the profile's `state.db` into the database; `--to sqlite`
copies the database back into `state.db` (or `--db PATH`). The copy is verified (row counts
and checksums of every table) and can be continued after an interruption with `--resume`.
Stop the gateway first: rows written during the copy would be missed by it. The DSN is a
secret and is never printed; without `--dsn` the config's `storage.dsn` is used.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

__all__ = ["app"]

app = typer.Typer(help="Move the state store between backends.", no_args_is_help=True)

EXIT_MISMATCH = 1


@app.callback()
def _group() -> None:
    """Move the state store between backends."""


@app.command("migrate")
def migrate(
    to: Annotated[Literal["postgres", "sqlite"],
                  typer.Option("--to", help="Destination backend: postgres or sqlite.")],
    dsn: Annotated[str | None, typer.Option(
        "--dsn", help="PostgreSQL URI (default: storage.dsn of the config).")] = None,
    db: Annotated[Path | None, typer.Option(
        "--db", help="The SQLite file (default: the profile's state.db).")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue an interrupted copy into a destination with data.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable JSON.")] = False,
) -> None:
    """Copy every session, message and ledger to the other backend, then verify the copy."""
    from gateway.cli.bootstrap import EXIT_USAGE, fail, load_config_or_exit, run_async
    from gateway.paths import paths
    from hermes_common.redact import register_secret
    from storage.errors import StorageError
    from storage.opening import describe_target
    from storage.postgres.transfer import TransferMismatch, transfer

    if dsn is None:
        dsn = load_config_or_exit().config.storage.dsn_value()
    if not dsn:
        fail("--dsn is required (or set storage.dsn in the config)", EXIT_USAGE)
    register_secret(dsn)
    path = db or paths().state_db
    if to == "postgres" and not path.exists():
        fail(f"no state.db at {path}", EXIT_USAGE)
    where = describe_target("postgres", path=None, dsn=dsn)
    direction: Literal["to_postgres", "to_sqlite"] = (
        "to_postgres" if to == "postgres" else "to_sqlite")

    def progress(table: str, copied: int) -> None:
        if not as_json:
            typer.echo(f"  {table}: {copied} rows copied", err=True)

    try:
        reports = run_async(transfer(direction, sqlite_path=path, dsn=dsn, resume=resume,
                                       progress=progress))
        ok = True
    except TransferMismatch as exc:
        reports, ok = exc.reports, False
    except (StorageError, OSError, RuntimeError) as exc:
        fail(f"migrate failed: {exc}")
    except Exception as exc:  # noqa: BLE001 - the driver's errors (asyncpg.PostgresError, …)
        fail(f"migrate failed: {type(exc).__name__}: {exc}")
    rows = [{"table": r.table, "source_rows": r.source_rows,
             "destination_rows": r.destination_rows, "copied": r.copied,
             "checksum": r.checksum, "matches": r.matches} for r in reports]
    if as_json:
        typer.echo(json.dumps({"to": to, "sqlite": str(path), "postgres": where,
                               "verified": ok, "tables": rows}))
    else:
        src, dst = (str(path), where) if to == "postgres" else (where, str(path))
        typer.echo(f"{src} → {dst}")
        for r in rows:
            mark = "ok" if r["matches"] else "MISMATCH"
            typer.echo(f"  {r['table']:<20} {r['source_rows']:>9} → "
                       f"{r['destination_rows']:>9}  {mark}")
        typer.echo("verified: counts and checksums match" if ok else "verification FAILED")
    if not ok:
        raise typer.Exit(EXIT_MISMATCH)
