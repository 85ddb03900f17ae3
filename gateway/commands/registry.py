"""Slash-command registry: names, aliases, help, arguments and who may use them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.commands.context import CommandContext

__all__ = ["Access", "Command", "CommandRegistry", "ParsedCommand", "parse_command"]

Handler = Callable[["CommandContext"], Awaitable[str | None]]


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    name: str
    args: str
    raw: str


def parse_command(text: str, *, bot_username: str | None = None) -> ParsedCommand | None:
    """`/name[@bot] args` → ParsedCommand. None when the text is not a command.

    A token containing a further `/` (a path such as `/etc/hosts`) is not a command. A
    command addressed to another bot (`/help@otherbot`) is not ours.
    """
    stripped = text.strip()
    if not stripped.startswith("/") or len(stripped) < 2:
        return None
    parts = stripped[1:].split(None, 1)
    head = parts[0]
    rest = parts[1] if len(parts) > 1 else ""
    name, _, target = head.partition("@")
    if not name or "/" in name:
        return None
    if target and bot_username and target.lower() != bot_username.lower().lstrip("@"):
        return None
    # iOS and some clients turn `--` into an em dash.
    rest = rest.replace("\u2014", "--").replace("\u2013", "-")
    return ParsedCommand(name=name.lower(), args=rest.strip(), raw=stripped)


class Access(StrEnum):
    """Who may use a command (enforced by the inbound command lane, `gateway.commands.access`).

    `everyone`: any user who reaches the bot. `group`: it changes the chat's conversation, so
    in a group only an admin may use it, unless `gateway.group_commands: everyone`; in a
    direct chat the user's own conversation is theirs. `admin`: admins only, everywhere.
    Admins are `gateway.admins` plus the operator's own terminal."""

    EVERYONE = "everyone"
    GROUP = "group"
    ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class Command:
    """One slash command.

    `busy_ok`: may run while the session's agent is working (otherwise the user is told to
    wait or /stop). `access`: who may use it. `reads_without_args`: used bare the command only
    shows something (`/title`), so anyone may use it that way.
    """

    name: str
    help: str
    handler: Handler
    aliases: tuple[str, ...] = ()
    args: str = ""
    busy_ok: bool = False
    access: Access = Access.EVERYONE
    reads_without_args: bool = False

    def usage(self) -> str:
        return f"/{self.name}" + (f" {self.args}" if self.args else "")


class CommandRegistry:
    def __init__(self, commands: Iterable[Command] = ()) -> None:
        self._by_name: dict[str, Command] = {}
        self._ordered: list[Command] = []
        for c in commands:
            self.add(c)

    def add(self, command: Command) -> None:
        for n in (command.name, *command.aliases):
            if n in self._by_name:
                raise ValueError(f"duplicate command name /{n}")
            self._by_name[n] = command
        self._ordered.append(command)

    def resolve(self, name: str) -> Command | None:
        return self._by_name.get(name.lower())

    def __iter__(self) -> Iterator[Command]:
        return iter(self._ordered)

    def menu(self) -> list[tuple[str, str]]:
        """(name, help) pairs for platform command menus."""
        return [(c.name, c.help) for c in self._ordered]

    def help_text(self) -> str:
        lines = ["Commands:"]
        for c in self._ordered:
            alias = f" (also /{', /'.join(c.aliases)})" if c.aliases else ""
            who = {Access.GROUP: " [admins, in groups]", Access.ADMIN: " [admins]"}.get(
                c.access, "")
            lines.append(f"{c.usage()} — {c.help}{alias}{who}")
        return "\n".join(lines)
