"""Install and uninstall a profile's service: write/remove the file, then tell the manager.

When the manager is missing or refuses (a container without systemd as PID 1, say), the
file operations still happen and the outcome carries the commands to run by hand.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from gateway.paths import ensure_private_dir, ensure_profile_dirs, paths
from gateway.service.errors import ServiceError
from gateway.service.manager import CommandResult, backend_for, run_command
from gateway.service.naming import (
    Manager,
    Scope,
    ServiceNames,
    default_manager,
    service_names,
    unit_dir,
)
from gateway.service.render import ServiceSpec

__all__ = [
    "Outcome",
    "install",
    "installed_scopes",
    "is_root",
    "target_for",
    "uninstall",
    "uninstall_service_for",
]

FILE_MODE = 0o644


@dataclass(slots=True)
class Outcome:
    """What an install/uninstall did. `hints` are commands to run by hand (non-empty when
    the manager is missing or one of its commands failed)."""

    target: Path
    changed: bool
    commands: list[CommandResult] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[CommandResult]:
        return [c for c in self.commands if not c.ok]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.hints


def is_root() -> bool:
    return os.geteuid() == 0


def target_for(names: ServiceNames, manager: Manager, scope: Scope) -> Path:
    return unit_dir(manager, scope) / names.file_name(manager)


def installed_scopes(names: ServiceNames, manager: Manager) -> list[Scope]:
    """Scopes in which a service file for `names` exists (user first)."""
    scopes: tuple[Scope, ...] = ("user", "system")
    return [s for s in scopes if target_for(names, manager, s).is_file()]


def _write_atomic(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _prepare_dirs(spec: ServiceSpec) -> None:
    """Profile dirs and the lock dir must exist before a sandboxed start (ReadWritePaths)."""
    if spec.scope == "user":
        ensure_profile_dirs(paths(spec.home))
        ensure_private_dir(spec.lock_dir)
        return
    if not spec.home.is_dir():
        raise ServiceError(f"profile home {spec.home} does not exist")
    if not spec.lock_dir.exists():
        ensure_private_dir(spec.lock_dir)
        if spec.run_as:
            pw = pwd.getpwnam(spec.run_as)
            with contextlib.suppress(OSError):
                os.chown(spec.lock_dir, pw.pw_uid, pw.pw_gid)


def _linger_note(spec: ServiceSpec) -> list[str]:
    if spec.manager != "systemd" or spec.scope != "user":
        return []
    user = pwd.getpwuid(os.getuid()).pw_name
    r = run_command(["loginctl", "show-user", user, "--property=Linger", "--value"], timeout=10)
    if r.ok and r.stdout.strip() == "no":
        return [f"user services stop when {user} logs out and do not start at boot; "
                f"to keep it running: loginctl enable-linger {user}"]
    return []


def install(spec: ServiceSpec, text: str, *, start: bool = True) -> Outcome:
    """Write `text` to `spec.target` and enable (and with `start`, start) the service.

    Raises ServiceError when the system scope is asked for without root, OSError when the
    file cannot be written. Manager failures are reported in the outcome, not raised.
    """
    if spec.scope == "system" and not is_root():
        raise ServiceError("--system installs need root: run it with sudo "
                           "(or use --user for a per-user service)")
    _prepare_dirs(spec)
    _write_atomic(spec.target, text)
    backend = backend_for(spec.manager, spec.scope)
    out = Outcome(spec.target, True)
    if not backend.available():
        out.hints = backend.hint("install", spec.names, spec.target)
        return out
    out.commands = backend.activate(spec.names, spec.target, start=start)
    if out.failed:
        out.hints = backend.hint("install", spec.names, spec.target)
    out.notes = _linger_note(spec)
    return out


def uninstall(names: ServiceNames, manager: Manager, scope: Scope) -> Outcome:
    """Stop and disable the service, remove its file, reload the manager.

    Nothing installed → `changed` False. Raises ServiceError for the system scope without
    root, OSError when the file cannot be removed.
    """
    target = target_for(names, manager, scope)
    out = Outcome(target, False)
    if not target.exists():
        return out
    if scope == "system" and not is_root():
        raise ServiceError(f"the system service {target} needs root to remove: run with sudo")
    backend = backend_for(manager, scope)
    available = backend.available()
    if available:
        out.commands += backend.deactivate(names, target)
    target.unlink()
    out.changed = True
    if available:
        out.commands += backend.after_remove()
    if not available or out.failed:
        out.hints = [h for h in backend.hint("uninstall", names, target)
                     if not h.startswith("rm ")]  # the file is already gone
    return out


def uninstall_service_for(home: Path, *, manager: Manager | None = None) -> list[Path]:
    """Stop and remove every service file (user and system scope) of the profile at `home`.

    For `hermes profile delete`, before the directory goes. Returns the removed files
    (empty when none was installed). Raises ServiceError when a system-scope service exists
    and this process is not root (the profile must not be deleted then), OSError when a file
    cannot be removed. Manager command failures are ignored here: the file is removed anyway
    and the caller's stop of the running gateway follows.
    """
    names = service_names(home)
    mgr = manager or default_manager()
    removed: list[Path] = []
    for scope in installed_scopes(names, mgr):
        out = uninstall(names, mgr, scope)
        if out.changed:
            removed.append(out.target)
    return removed
