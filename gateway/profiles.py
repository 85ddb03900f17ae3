"""Profiles: isolated homes for config, secrets and state (DESIGN.md §5, §6).

Resolution order, applied once at CLI entry: `-p/--profile NAME` > `$HERMES_HOME` > the
sticky active profile (`~/.hermes/active_profile`, written by `hermes profile use`) > the
default profile `~/.hermes`. A named profile lives in `~/.hermes/profiles/<name>`; the name
`default` always means the root itself.

This module holds no CLI code: `gateway.cli.profile_cmd` presents it.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gateway.paths import (
    FILE_MODE,
    ProfilePaths,
    active_profile_file,
    default_root,
    ensure_private_dir,
    ensure_private_file,
    ensure_profile_dirs,
    profiles_root,
)

__all__ = [
    "DEFAULT_PROFILE",
    "HomeResolution",
    "ProfileError",
    "ProfileExists",
    "ProfileInfo",
    "ProfileNotFound",
    "InvalidProfileName",
    "clear_sticky",
    "create_profile",
    "delete_profile",
    "list_profiles",
    "profile_home",
    "profile_info",
    "profile_name_for",
    "resolve_home",
    "sticky_profile",
    "use_profile",
    "validate_name",
]

DEFAULT_PROFILE = "default"
MAX_NAME_LENGTH = 32
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
CLONED_FILES = ("config.yaml", ".env", "SOUL.md")
CLONED_DIRS = ("memories",)

STARTER_CONFIG = """\
# Hermes Gateway configuration for this profile. Reference: docs/configuration.md
# ${VAR} and ${VAR:-default} expand from the process environment, then this profile's .env.
providers:
  main:
    base_url: ${OPENAI_BASE_URL:-https://api.openai.com/v1}
    api_keys: ["${OPENAI_API_KEY:-}"]
    model: ${HERMES_MODEL:-gpt-4o-mini}
model:
  provider: main
platforms: {}
"""


class ProfileError(Exception):
    """A profile operation failed; the message is safe to show to the user."""


class InvalidProfileName(ProfileError, ValueError):
    """The name breaks the naming rule (lowercase letters, digits, `-`, `_`)."""


class ProfileNotFound(ProfileError):
    """No profile of that name exists."""


class ProfileExists(ProfileError):
    """A profile of that name already exists."""


def validate_name(name: str) -> str:
    """Return `name` if it is a valid profile name; raise `InvalidProfileName` otherwise.

    Valid: 1–32 characters from lowercase letters, digits, `-` and `_`, starting with a
    letter or digit. `default` is valid and means the root profile.
    """
    if not name:
        raise InvalidProfileName("profile name must not be empty")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidProfileName(f"profile name longer than {MAX_NAME_LENGTH} characters")
    if not _NAME_RE.match(name):
        raise InvalidProfileName(
            f"invalid profile name {name!r}: use lowercase letters, digits, '-' and '_', "
            "starting with a letter or digit"
        )
    return name


def profile_home(name: str) -> Path:
    """Home directory of profile `name` (validated); `default` is `~/.hermes`."""
    validate_name(name)
    return default_root() if name == DEFAULT_PROFILE else profiles_root() / name


def profile_name_for(home: Path) -> str | None:
    """The profile name whose home is `home`, or None for a custom `HERMES_HOME`."""
    home = Path(home).expanduser().resolve()
    if home == default_root().resolve():
        return DEFAULT_PROFILE
    if home.parent == profiles_root().resolve() and _NAME_RE.match(home.name):
        return home.name
    return None


def _exists(name: str) -> bool:
    return name == DEFAULT_PROFILE or profile_home(name).is_dir()


def sticky_profile() -> str | None:
    """The sticky profile name, or None when unset or unreadable/invalid."""
    try:
        text = active_profile_file().read_text(encoding="utf-8").strip()
    except OSError:
        return None
    try:
        return validate_name(text) if text else None
    except InvalidProfileName:
        return None


@dataclass(frozen=True, slots=True)
class HomeResolution:
    """Result of `resolve_home`: the home, how it was chosen, and any warning to show."""

    home: Path
    source: str  # "flag" | "env" | "sticky" | "default"
    name: str | None
    warning: str | None = None


def resolve_home(
    profile: str | None = None, environ: Mapping[str, str] | None = None
) -> HomeResolution:
    """Resolve the active home: `-p` > `$HERMES_HOME` > sticky profile > `~/.hermes`.

    Raises `InvalidProfileName` for a bad `-p` value and `ProfileNotFound` when `-p` names a
    profile that does not exist. A sticky profile whose directory vanished falls back to the
    default profile with a warning (so `hermes profile use` can still repair it).
    """
    env = os.environ if environ is None else environ
    if profile is not None:
        if not _exists(validate_name(profile)):
            raise ProfileNotFound(
                f"profile {profile!r} does not exist (create it with "
                f"`hermes profile create {profile}`)"
            )
        return HomeResolution(profile_home(profile), "flag", profile)
    if env.get("HERMES_HOME"):
        h = Path(env["HERMES_HOME"]).expanduser().resolve()
        return HomeResolution(h, "env", profile_name_for(h))
    sticky = sticky_profile()
    if sticky is not None and sticky != DEFAULT_PROFILE:
        if _exists(sticky):
            return HomeResolution(profile_home(sticky), "sticky", sticky)
        return HomeResolution(
            default_root(),
            "default",
            DEFAULT_PROFILE,
            warning=f"active profile {sticky!r} no longer exists; using the default profile",
        )
    return HomeResolution(default_root(), "default", DEFAULT_PROFILE)


def _write_atomic(path: Path, text: str) -> None:
    ensure_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def use_profile(name: str) -> Path:
    """Make `name` the sticky profile (`default` clears it). Raises ProfileError."""
    if not _exists(validate_name(name)):
        raise ProfileNotFound(f"profile {name!r} does not exist")
    if name == DEFAULT_PROFILE:
        clear_sticky()
    else:
        _write_atomic(active_profile_file(), name + "\n")
    return profile_home(name)


def clear_sticky() -> None:
    """Remove the sticky profile file, if any."""
    active_profile_file().unlink(missing_ok=True)


def create_profile(name: str, *, clone_from: Path | None = None) -> Path:
    """Create profile `name` with 0700 directories and a 0600 `.env`; return its home.

    With `clone_from`, copies `config.yaml`, `.env`, `SOUL.md` and `memories/` from that home
    (never sessions, `state.db`, logs or cache). Otherwise writes a starter `config.yaml`.
    Raises `InvalidProfileName`, `ProfileExists` (also for `default`), `ProfileNotFound`
    when `clone_from` is missing, OSError on filesystem failures.
    """
    validate_name(name)
    if name == DEFAULT_PROFILE:
        raise ProfileExists("'default' is the root profile and always exists")
    target = profile_home(name)
    if target.exists():
        raise ProfileExists(f"profile {name!r} already exists at {target}")
    if clone_from is not None and not clone_from.is_dir():
        raise ProfileNotFound(f"cannot clone: {clone_from} does not exist")
    ensure_private_dir(profiles_root())
    p = ensure_profile_dirs(ProfilePaths(target))
    if clone_from is not None:
        src = ProfilePaths(clone_from)
        for fname in CLONED_FILES:
            if (src.root / fname).is_file():
                shutil.copy2(src.root / fname, p.root / fname)
        for dname in CLONED_DIRS:
            if (src.root / dname).is_dir():
                shutil.copytree(src.root / dname, p.root / dname, dirs_exist_ok=True)
    else:
        p.config_file.write_text(STARTER_CONFIG, encoding="utf-8")
    ensure_private_file(p.env_file)
    if p.config_file.is_file():
        os.chmod(p.config_file, FILE_MODE)
    return target


@dataclass(frozen=True, slots=True)
class ProfileInfo:
    """What `hermes profile list/show` reports about one profile."""

    name: str
    home: Path
    active: bool
    sticky: bool
    gateway_pid: int | None
    has_config: bool
    has_env: bool
    has_state_db: bool


def profile_info(name: str, *, active_home: Path | None = None) -> ProfileInfo:
    """Describe profile `name`; `active_home` marks it active when it matches. Raises
    ProfileError."""
    from gateway.instance import running_pid

    home = profile_home(name)
    if not _exists(name):
        raise ProfileNotFound(f"profile {name!r} does not exist")
    p = ProfilePaths(home)
    sticky = sticky_profile() or DEFAULT_PROFILE
    return ProfileInfo(
        name=name,
        home=home,
        active=active_home is not None and home.resolve() == Path(active_home).resolve(),
        sticky=sticky == name,
        gateway_pid=running_pid(home),
        has_config=p.config_file.is_file(),
        has_env=p.env_file.is_file(),
        has_state_db=p.state_db.is_file(),
    )


def list_profiles(*, active_home: Path | None = None) -> list[ProfileInfo]:
    """The default profile first, then named profiles sorted by name."""
    names = [DEFAULT_PROFILE]
    root = profiles_root()
    if root.is_dir():
        for child in sorted(root.iterdir()):
            if child.is_dir() and _NAME_RE.match(child.name) and len(child.name) <= MAX_NAME_LENGTH:
                names.append(child.name)
    return [profile_info(n, active_home=active_home) for n in names]


def delete_profile(name: str, *, stop_timeout: float = 45.0) -> Path:
    """Delete profile `name`: stop and uninstall its service, stop its running gateway, reset
    the sticky profile if it pointed here, then remove the directory. Returns the removed home.

    Raises `ProfileError` for `default` or a missing profile, or when the running gateway did
    not stop within `stop_timeout` seconds (nothing is deleted then).
    """
    from gateway.instance import stop_running

    validate_name(name)
    if name == DEFAULT_PROFILE:
        raise ProfileError("the default profile cannot be deleted")
    home = profile_home(name)
    if not home.is_dir():
        raise ProfileNotFound(f"profile {name!r} does not exist")
    # gateway.service imports this module: import it here, at use.
    from gateway.service import ServiceError, uninstall_service_for

    try:
        uninstall_service_for(home)  # stops and removes its systemd/launchd service first
    except ServiceError as exc:
        raise ProfileError(str(exc)) from exc
    if not stop_running(home, timeout=stop_timeout):
        raise ProfileError(
            f"the gateway of profile {name!r} did not stop within {stop_timeout:.0f}s; "
            "nothing was deleted"
        )
    if sticky_profile() == name:
        clear_sticky()
    shutil.rmtree(home)
    return home
