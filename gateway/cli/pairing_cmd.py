"""`hermes pairing list|approve|revoke`: let unknown users in by the code the bot gave them."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from gateway.cli.terminal import plain, safe_text

if TYPE_CHECKING:
    from storage.ports import PairingStore
    from storage.types import ApprovedUser, PairingCode

__all__ = ["app"]

app = typer.Typer(help="Approve users who asked the bot for access.", no_args_is_help=True)
T = TypeVar("T")
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _run(fn: Callable[[PairingStore], Awaitable[T]]) -> T:
    from gateway.cli.bootstrap import load_config_or_exit, run_async
    from gateway.paths import paths
    from gateway.storage_backend import open_configured_store

    config = load_config_or_exit().config

    async def main() -> T:
        store = await open_configured_store(config, paths().state_db)
        try:
            return await fn(store)
        finally:
            await store.close()

    return run_async(main())


def _when(ts: float | None) -> str:
    return "" if ts is None else datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


@app.command("list")
def list_(as_json: JsonOpt = False) -> None:
    """Pending requests and approved users."""

    async def fn(store: PairingStore) -> tuple[list[PairingCode], list[ApprovedUser]]:
        return await store.pending_pairing_codes(), await store.approved_users()

    pending, approved = _run(fn)
    if as_json:
        typer.echo(json.dumps({
            "pending": [{"platform": p.platform, "user_id": p.user_id, "display": p.display,
                         "expires_at": p.expires_at} for p in pending],
            "approved": [{"platform": a.platform, "user_id": a.user_id, "display": a.display,
                          "approved_at": a.approved_at} for a in approved],
        }, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    t = Table(title="Pending pairing requests")
    for col in ("platform", "user", "name", "expires"):
        t.add_column(col)
    for p in pending:
        t.add_row(safe_text(p.platform), safe_text(p.user_id), safe_text(p.display or ""),
                  _when(p.expires_at))
    console.print(t)
    a = Table(title="Approved users")
    for col in ("platform", "user", "name", "approved"):
        a.add_column(col)
    for u in approved:
        a.add_row(safe_text(u.platform), safe_text(u.user_id), safe_text(u.display or ""),
                  _when(u.approved_at))
    console.print(a)


@app.command("approve")
def approve(platform: str, code: str) -> None:
    """Approve the user who was given CODE on PLATFORM."""

    async def fn(store: PairingStore) -> ApprovedUser | None:
        return await store.approve_pairing_code(platform, code.strip().upper())

    user = _run(fn)
    if user is None:
        from gateway.cli.bootstrap import fail

        fail(f"no pending pairing code {code!r} on {platform} (wrong, expired or used)", 1)
    typer.echo(f"Approved {plain(user.display or user.user_id)} ({plain(user.user_id)}) on "
               f"{plain(platform)}.")


@app.command("revoke")
def revoke(platform: str, user_id: str) -> None:
    """Remove an approved user."""

    async def fn(store: PairingStore) -> bool:
        return bool(await store.revoke_user(platform, user_id))

    if not _run(fn):
        from gateway.cli.bootstrap import fail

        fail(f"{user_id} is not an approved user on {platform}", 1)
    typer.echo(f"Revoked {plain(user_id)} on {plain(platform)}.")
