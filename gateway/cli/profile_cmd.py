"""`hermes profile create|list|use|show|delete`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gateway.cli.bootstrap import EXIT_USAGE, current, fail

if TYPE_CHECKING:
    from gateway.profiles import ProfileInfo

__all__ = ["app"]

app = typer.Typer(help="Manage profiles (isolated config, secrets and state).",
                  no_args_is_help=True)


@contextmanager
def _errors() -> Iterator[None]:
    from gateway.profiles import InvalidProfileName, ProfileError

    try:
        yield
    except InvalidProfileName as exc:
        fail(str(exc), EXIT_USAGE)
    except ProfileError as exc:
        fail(str(exc), 1)
    except OSError as exc:
        fail(f"{exc.strerror or type(exc).__name__}: {exc.filename or ''}".rstrip(": "), 1)


def _as_dict(info: ProfileInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "home": str(info.home),
        "active": info.active,
        "sticky": info.sticky,
        "gateway_pid": info.gateway_pid,
        "has_config": info.has_config,
        "has_env": info.has_env,
        "has_state_db": info.has_state_db,
    }


@app.command()
def create(
    name: Annotated[str, typer.Argument(help="lowercase letters, digits, '-' and '_'")],
    clone: Annotated[
        bool,
        typer.Option("--clone", help="Copy config.yaml, .env, SOUL.md and memories/ from the "
                     "active profile (never sessions, state.db, logs or cache)."),
    ] = False,
    clone_from: Annotated[
        str | None, typer.Option("--from", help="With --clone: the profile to copy from.")
    ] = None,
) -> None:
    """Create a profile in ~/.hermes/profiles/NAME."""
    from gateway.profiles import create_profile, profile_home

    with _errors():
        source = None
        if clone or clone_from:
            source = profile_home(clone_from) if clone_from else current().home
        home = create_profile(name, clone_from=source)
    suffix = f" (cloned from {source})" if source else ""
    typer.echo(f"created profile {name!r} at {home}{suffix}")
    typer.echo(
        f"use it with `hermes -p {name} …` or make it sticky with `hermes profile use {name}`"
    )


@app.command("list")
def list_(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List profiles; `*` marks the one this command runs with."""
    from gateway.profiles import list_profiles

    with _errors():
        infos = list_profiles(active_home=current().home)
    if as_json:
        typer.echo(json.dumps([_as_dict(i) for i in infos], indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for col in ("", "NAME", "STICKY", "GATEWAY", "HOME"):
        table.add_column(col)
    for i in infos:
        table.add_row("*" if i.active else "", i.name, "yes" if i.sticky else "",
                      f"pid {i.gateway_pid}" if i.gateway_pid is not None else "-", str(i.home))
    Console(soft_wrap=True).print(table)


@app.command()
def use(name: Annotated[str, typer.Argument(help="Profile name; 'default' clears it.")]) -> None:
    """Make NAME the sticky active profile for later commands."""
    from gateway.profiles import use_profile

    with _errors():
        home = use_profile(name)
    typer.echo(f"active profile: {name} ({home})")


@app.command()
def show(
    name: Annotated[str | None, typer.Argument(help="Default: the active profile.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show a profile's home, files and running gateway."""
    from gateway.paths import paths
    from gateway.profiles import profile_info

    state = current()
    with _errors():
        if name is None and state.profile is None:
            info_d: dict[str, Any] = {"name": None, "home": str(state.home), "active": True}
            p = paths(state.home)
            from gateway.instance import running_pid

            info_d.update(gateway_pid=running_pid(state.home), has_config=p.config_file.is_file(),
                          has_env=p.env_file.is_file(), has_state_db=p.state_db.is_file())
        else:
            info_d = _as_dict(profile_info(name or state.profile or "default",
                                           active_home=state.home))
    info_d["selected_by"] = state.source if info_d.get("active") else None
    if as_json:
        typer.echo(json.dumps(info_d, indent=2))
        return
    for key, value in info_d.items():
        typer.echo(f"{key:13} {'-' if value is None else value}")


@app.command()
def delete(
    name: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a profile: stops its running gateway first, resets the sticky profile if it
    pointed there, then removes the directory."""
    from gateway.profiles import DEFAULT_PROFILE, ProfileNotFound, delete_profile, profile_home

    with _errors():
        home = profile_home(name)
        if name == DEFAULT_PROFILE:
            fail("the default profile cannot be deleted", 1)
        if not home.is_dir():
            raise ProfileNotFound(f"profile {name!r} does not exist")
        if not yes and not typer.confirm(
            f"Delete profile {name!r} and everything in {home}?", default=False
        ):
            fail("nothing deleted", 1)
        delete_profile(name)
    typer.echo(f"deleted profile {name!r} ({home})")
