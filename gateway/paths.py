"""Where a profile keeps its files (DESIGN.md §7).

`HERMES_HOME` is resolved exactly once, at CLI entry (see `gateway.profiles.resolve_home`),
and stored here with `set_home()`. Everything that needs a path asks `home()` / `paths()`;
nothing reads `os.environ["HERMES_HOME"]` on its own.

Machine-wide paths (the profiles root, the sticky active-profile file, the bot-token lock
directory) hang off `default_root()`, which is `~/.hermes` whatever profile is active.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ProfilePaths",
    "active_profile_file",
    "default_root",
    "ensure_private_dir",
    "ensure_private_file",
    "ensure_profile_dirs",
    "home",
    "locks_dir",
    "paths",
    "profiles_root",
    "set_home",
]

_HOME: Path | None = None

DIR_MODE = 0o700
FILE_MODE = 0o600


def default_root() -> Path:
    """The root that holds the default profile and `profiles/<name>`: `~/.hermes`."""
    return Path(os.path.expanduser("~")) / ".hermes"


def profiles_root() -> Path:
    """Directory holding named profiles: `~/.hermes/profiles`."""
    return default_root() / "profiles"


def active_profile_file() -> Path:
    """The sticky active-profile file written by `hermes profile use`."""
    return default_root() / "active_profile"


def locks_dir() -> Path:
    """Machine-wide lock directory (one poller per bot token across profiles).

    `$HERMES_LOCK_DIR` overrides it (for containers whose `$HOME` is not writable).
    """
    env = os.environ.get("HERMES_LOCK_DIR")
    return Path(env).expanduser() if env else default_root() / "locks"


def set_home(path: Path | None) -> None:
    """Fix the active profile home for this process (called once at CLI entry).
    `None` forgets it (tests), so `home()` falls back to `$HERMES_HOME` / `~/.hermes`."""
    global _HOME
    _HOME = Path(path).expanduser().resolve() if path is not None else None


def home() -> Path:
    """The active profile home; falls back to `$HERMES_HOME` or `~/.hermes` when unset."""
    if _HOME is not None:
        return _HOME
    env = os.environ.get("HERMES_HOME")
    return Path(env).expanduser().resolve() if env else default_root()


@dataclass(frozen=True, slots=True)
class ProfilePaths:
    """Every well-known path inside one profile home."""

    root: Path

    @property
    def state_db(self) -> Path:
        return self.root / "state.db"

    @property
    def env_file(self) -> Path:
        return self.root / ".env"

    @property
    def config_file(self) -> Path:
        return self.root / "config.yaml"

    @property
    def soul(self) -> Path:
        return self.root / "SOUL.md"

    @property
    def memories(self) -> Path:
        return self.root / "memories"

    @property
    def skills(self) -> Path:
        """The profile's skills: `skills/<category>/<name>/SKILL.md`."""
        return self.root / "skills"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def log_file(self) -> Path:
        return self.logs / "gateway.log"

    @property
    def run_dir(self) -> Path:
        """Pid and lock files of a running gateway."""
        return self.root / "run"

    @property
    def lock_file(self) -> Path:
        return self.run_dir / "gateway.lock"

    @property
    def pid_file(self) -> Path:
        return self.run_dir / "gateway.pid"


def paths(root: Path | None = None) -> ProfilePaths:
    return ProfilePaths(root if root is not None else home())


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) if missing; a directory this call creates gets mode 0700.

    Existing directories keep their mode (a user-chosen `HERMES_HOME` is not rewritten).
    Raises OSError when it cannot be created.
    """
    missing: list[Path] = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    for created in missing:
        os.chmod(created, DIR_MODE)
    return path


def ensure_private_file(path: Path) -> Path:
    """Create `path` empty with mode 0600 if missing, or tighten an existing one to 0600."""
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, FILE_MODE)
    os.close(fd)
    os.chmod(path, FILE_MODE)
    return path


def ensure_profile_dirs(p: ProfilePaths) -> ProfilePaths:
    """Create the profile home and its standard sub-directories (0700). Raises OSError."""
    ensure_private_dir(p.root)
    for sub in (p.memories, p.cache, p.workspace, p.logs, p.run_dir):
        ensure_private_dir(sub)
    return p
