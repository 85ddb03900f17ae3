"""Service names per profile, managers, scopes and where unit files live.

The default profile is `hermes-gateway` (launchd label `ai.hermes.gateway`), a named profile
`hermes-gateway-<profile>` (`ai.hermes.gateway.<profile>`). A custom `HERMES_HOME` outside
`~/.hermes` gets `hermes-gateway-home-<8 hex of its path>` so two such homes never share a
unit.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gateway.profiles import DEFAULT_PROFILE, profile_name_for

__all__ = [
    "BASE_NAME",
    "BASE_LABEL",
    "Manager",
    "Scope",
    "ServiceNames",
    "default_manager",
    "service_names",
    "unit_dir",
]

Manager = Literal["systemd", "launchd"]
Scope = Literal["user", "system"]

BASE_NAME = "hermes-gateway"
BASE_LABEL = "ai.hermes.gateway"


@dataclass(frozen=True, slots=True)
class ServiceNames:
    """Names of one profile's service. `profile` is None for a custom HERMES_HOME."""

    home: Path
    profile: str | None
    suffix: str | None

    @property
    def unit_base(self) -> str:
        """`hermes-gateway` or `hermes-gateway-<suffix>` (journal identifier too)."""
        return f"{BASE_NAME}-{self.suffix}" if self.suffix else BASE_NAME

    @property
    def unit(self) -> str:
        """systemd unit file name, e.g. `hermes-gateway-work.service`."""
        return f"{self.unit_base}.service"

    @property
    def label(self) -> str:
        """launchd label, e.g. `ai.hermes.gateway.work`."""
        return f"{BASE_LABEL}.{self.suffix}" if self.suffix else BASE_LABEL

    @property
    def plist(self) -> str:
        return f"{self.label}.plist"

    @property
    def display(self) -> str:
        """What to call the profile in messages."""
        return self.profile or str(self.home)

    def file_name(self, manager: Manager) -> str:
        return self.unit if manager == "systemd" else self.plist


def service_names(home: Path) -> ServiceNames:
    """Names for the profile whose home is `home`. Never raises."""
    home = Path(home).expanduser().resolve()
    name = profile_name_for(home)
    if name == DEFAULT_PROFILE:
        return ServiceNames(home, name, None)
    if name is not None:
        return ServiceNames(home, name, name)
    digest = hashlib.sha256(str(home).encode("utf-8")).hexdigest()[:8]
    return ServiceNames(home, None, f"home-{digest}")


def default_manager(platform: str | None = None) -> Manager:
    """The host's service manager: launchd on macOS, systemd elsewhere."""
    return "launchd" if (platform or sys.platform) == "darwin" else "systemd"


def unit_dir(manager: Manager, scope: Scope, user_home: Path | None = None) -> Path:
    """Directory the unit file / plist goes to.

    systemd user: `$XDG_CONFIG_HOME/systemd/user` (default `~/.config/systemd/user`);
    systemd system: `/etc/systemd/system`; launchd user: `~/Library/LaunchAgents`;
    launchd system: `/Library/LaunchDaemons`.
    """
    home = user_home if user_home is not None else Path(os.path.expanduser("~"))
    if manager == "systemd":
        if scope == "system":
            return Path("/etc/systemd/system")
        xdg = os.environ.get("XDG_CONFIG_HOME")
        base = Path(xdg) if xdg and user_home is None else home / ".config"
        return base / "systemd" / "user"
    if scope == "system":
        return Path("/Library/LaunchDaemons")
    return home / "Library" / "LaunchAgents"
