"""`hermes skills list|show|install|remove`: the profile's skills ($HERMES_HOME/skills/).

Imports the skills code inside each command, so `hermes --help` stays light."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gateway.cli.terminal import plain

if TYPE_CHECKING:
    from agent_core.skills import SkillStore

__all__ = ["app"]

app = typer.Typer(help="The agent's skills: list, show, install, remove.",
                  no_args_is_help=True)
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]
#: Exit code when a skill is unknown or refused (EX_DATAERR).
EXIT_REFUSED = 65


def _store() -> SkillStore:
    from agent_core.skills import SkillStore
    from gateway.paths import paths

    return SkillStore(paths().skills)


def _fail(message: str) -> None:
    print(f"hermes: {plain(message)}", file=sys.stderr)
    raise typer.Exit(EXIT_REFUSED)


@app.command("list")
def list_(as_json: JsonOpt = False) -> None:
    """Every skill: category/name and its description."""
    entries = _store().scan()
    if as_json:
        typer.echo(json.dumps([{"name": e.name, "category": e.category,
                                "description": e.meta.description if e.meta else None,
                                "error": e.error or None} for e in entries], indent=2))
        return
    if not entries:
        typer.echo(f"No skills in {_store().root}.")
        return
    for e in entries:
        desc = e.meta.description if e.meta else f"(broken: {e.error})"
        typer.echo(f"{plain(e.qualified)}: {plain(desc)}")


@app.command("show")
def show(name: Annotated[str, typer.Argument(help="Skill name or category/name.")]) -> None:
    """Print a skill's SKILL.md, its resource files and who last changed it."""
    from agent_core.skills import SkillError

    store = _store()
    try:
        entry, text = store.view(name)
    except SkillError as exc:
        _fail(str(exc))
        return
    typer.echo(plain(text).rstrip("\n"))
    files = store.resources(entry)
    typer.echo(f"\n-- {entry.path}")
    if files:
        typer.echo("-- files: " + ", ".join(plain(f) for f in files))
    history = store.history(entry.name)
    if history:
        last = history[-1]
        typer.echo(f"-- last change: {plain(last.get('action'))} by "
                   f"{plain(last.get('principal'))} at {plain(last.get('at'))}")


@app.command("install")
def install(
    source: Annotated[Path, typer.Argument(help="A skill folder (holding SKILL.md) or a "
                                           ".zip / .tar.gz of one.")],
    category: Annotated[str | None, typer.Option(help="Category folder to put it in.")] = None,
) -> None:
    """Copy a skill in, after validating it and scanning every text file of it."""
    from agent_core.skills import SkillError
    from agent_core.skills.archive import is_archive, unpack_skill

    store = _store()
    try:
        if is_archive(source):
            with tempfile.TemporaryDirectory(prefix="hermes-skill-") as tmp:
                entry = store.install(unpack_skill(source, Path(tmp)), category=category)
        elif source.is_dir():
            entry = store.install(source, category=category)
        else:
            _fail(f"{source} is neither a skill folder nor an archive")
            return
    except SkillError as exc:
        _fail(str(exc))
        return
    typer.echo(f"Installed {entry.qualified} into {entry.path}.")


@app.command("remove")
def remove(name: Annotated[str, typer.Argument(help="Skill name or category/name.")]) -> None:
    """Delete a skill and its files."""
    from agent_core.skills import SkillError

    try:
        entry = _store().delete(name)
    except SkillError as exc:
        _fail(str(exc))
        return
    typer.echo(f"Removed {entry.qualified}.")
