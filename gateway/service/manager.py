"""Drive the service manager: `systemctl [--user]` or `launchctl`.

Blocking (subprocess); for the CLI, never the event loop. A missing or unusable manager is
not an exception: each call returns a `CommandResult`, and `hint()` says what to run by hand
on a host that has the manager.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from gateway.service.naming import Manager, Scope, ServiceNames

__all__ = [
    "CommandResult",
    "Launchd",
    "ServiceBackend",
    "ServiceState",
    "Systemd",
    "backend_for",
    "run_command",
]

_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class CommandResult:
    """One manager command. `returncode` 127 = the command does not exist here."""

    argv: list[str]
    returncode: int
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def line(self) -> str:
        return shlex.join(self.argv)

    def why(self) -> str:
        """Short failure text (first non-empty line of stderr/stdout)."""
        for text in (self.stderr, self.stdout):
            for ln in text.splitlines():
                if ln.strip():
                    return ln.strip()
        return f"exit status {self.returncode}"


def run_command(argv: list[str], *, timeout: float = _TIMEOUT_S) -> CommandResult:
    """Run `argv`, capturing output. Never raises (missing command → 127, timeout → 124)."""
    if shutil.which(argv[0]) is None:
        return CommandResult(argv, 127, "", f"{argv[0]}: command not found")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return CommandResult(argv, 124, "", f"{argv[0]} timed out after {timeout:g}s")
    except OSError as exc:
        return CommandResult(argv, 126, "", f"{argv[0]}: {exc.strerror or exc}")
    return CommandResult(argv, done.returncode, done.stdout, done.stderr)


@dataclass(frozen=True, slots=True)
class ServiceState:
    """The manager's view of one service."""

    loaded: bool
    active: bool
    pid: int | None
    summary: str
    details: dict[str, str] = field(default_factory=dict)


class ServiceBackend:
    """Common shape of the two managers."""

    name: Manager
    command: str

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    def available(self) -> bool:
        return shutil.which(self.command) is not None

    # Each returns the commands it ran, in order.
    def activate(self, names: ServiceNames, target: Path, *, start: bool) -> list[CommandResult]:
        raise NotImplementedError

    def deactivate(self, names: ServiceNames, target: Path) -> list[CommandResult]:
        raise NotImplementedError

    def after_remove(self) -> list[CommandResult]:
        return []

    def start(self, names: ServiceNames, target: Path) -> CommandResult:
        raise NotImplementedError

    def stop(self, names: ServiceNames, target: Path) -> CommandResult:
        raise NotImplementedError

    def restart(self, names: ServiceNames, target: Path) -> CommandResult:
        raise NotImplementedError

    def state(self, names: ServiceNames) -> ServiceState:
        raise NotImplementedError

    def hint(self, action: str, names: ServiceNames, target: Path) -> list[str]:
        """Commands to run by hand for `action` (install/uninstall/start/stop/restart/status)."""
        raise NotImplementedError


class Systemd(ServiceBackend):
    name: Manager = "systemd"
    command = "systemctl"

    def _ctl(self, *args: str) -> list[str]:
        return ["systemctl", *(["--user"] if self.scope == "user" else []), *args]

    def activate(self, names: ServiceNames, target: Path, *, start: bool) -> list[CommandResult]:
        ran = [run_command(self._ctl("daemon-reload"))]
        if ran[-1].ok:
            ran.append(run_command(self._ctl("enable", *(["--now"] if start else []), names.unit)))
        return ran

    def deactivate(self, names: ServiceNames, target: Path) -> list[CommandResult]:
        return [run_command(self._ctl("disable", "--now", names.unit))]

    def after_remove(self) -> list[CommandResult]:
        return [run_command(self._ctl("daemon-reload"))]

    def start(self, names: ServiceNames, target: Path) -> CommandResult:
        return run_command(self._ctl("start", names.unit))

    def stop(self, names: ServiceNames, target: Path) -> CommandResult:
        return run_command(self._ctl("stop", names.unit))

    def restart(self, names: ServiceNames, target: Path) -> CommandResult:
        return run_command(self._ctl("restart", names.unit))

    def state(self, names: ServiceNames) -> ServiceState:
        props = "LoadState,ActiveState,SubState,MainPID,NRestarts,ExecMainStatus,UnitFileState"
        r = run_command(self._ctl("show", f"--property={props}", names.unit))
        if not r.ok:
            return ServiceState(False, False, None, f"unknown ({r.why()})")
        d = dict(ln.split("=", 1) for ln in r.stdout.splitlines() if "=" in ln)
        pid = int(d.get("MainPID", "0") or 0) or None
        loaded = d.get("LoadState") == "loaded"
        active = d.get("ActiveState") in ("active", "reloading", "activating", "deactivating")
        summary = f"{d.get('ActiveState', '?')} ({d.get('SubState', '?')})"
        return ServiceState(loaded, active, pid, summary, d)

    def hint(self, action: str, names: ServiceNames, target: Path) -> list[str]:
        ctl = shlex.join(self._ctl())
        verbs = {
            "install": [f"{ctl} daemon-reload", f"{ctl} enable --now {names.unit}"],
            "uninstall": [f"{ctl} disable --now {names.unit}", f"rm {shlex.quote(str(target))}",
                          f"{ctl} daemon-reload"],
            "status": [f"{ctl} status {names.unit}",
                       f"journalctl {'--user ' if self.scope == 'user' else ''}-u {names.unit}"],
        }
        return verbs.get(action, [f"{ctl} {action} {names.unit}"])


class Launchd(ServiceBackend):
    name: Manager = "launchd"
    command = "launchctl"

    def _domains(self) -> list[str]:
        if self.scope == "system":
            return ["system"]
        uid = os.getuid()
        return [f"gui/{uid}", f"user/{uid}"]

    def _loaded_in(self, names: ServiceNames) -> tuple[str | None, CommandResult | None]:
        for domain in self._domains():
            r = run_command(["launchctl", "print", f"{domain}/{names.label}"])
            if r.ok:
                return domain, r
        return None, None

    def _bootstrap(self, target: Path) -> list[CommandResult]:
        ran: list[CommandResult] = []
        for domain in self._domains():  # gui/ fails without a login session: try user/
            ran.append(run_command(["launchctl", "bootstrap", domain, str(target)]))
            if ran[-1].ok:
                break
        return ran

    def activate(self, names: ServiceNames, target: Path, *, start: bool) -> list[CommandResult]:
        ran = self.deactivate(names, target) if self._loaded_in(names)[0] else []
        if start:
            ran += self._bootstrap(target)
        return ran

    def deactivate(self, names: ServiceNames, target: Path) -> list[CommandResult]:
        domain, _ = self._loaded_in(names)
        if domain is None:
            return []
        return [run_command(["launchctl", "bootout", f"{domain}/{names.label}"])]

    def start(self, names: ServiceNames, target: Path) -> CommandResult:
        domain, _ = self._loaded_in(names)
        if domain is None:
            return self._bootstrap(target)[-1]
        return run_command(["launchctl", "kickstart", f"{domain}/{names.label}"])

    def stop(self, names: ServiceNames, target: Path) -> CommandResult:
        domain, _ = self._loaded_in(names)
        if domain is None:
            return CommandResult(["launchctl", "bootout", names.label], 0, "not loaded", "")
        return run_command(["launchctl", "bootout", f"{domain}/{names.label}"])

    def restart(self, names: ServiceNames, target: Path) -> CommandResult:
        # SIGUSR1 = drain, then exit 75; KeepAlive (non-zero exit) starts it again.
        domain, _ = self._loaded_in(names)
        if domain is None:
            return self._bootstrap(target)[-1]
        return run_command(["launchctl", "kill", "SIGUSR1", f"{domain}/{names.label}"])

    def state(self, names: ServiceNames) -> ServiceState:
        domain, r = self._loaded_in(names)
        if domain is None or r is None:
            return ServiceState(False, False, None, "not loaded")
        d: dict[str, str] = {"domain": domain}
        for ln in r.stdout.splitlines():
            key, sep, value = ln.strip().partition(" = ")
            if sep and key in ("state", "pid", "last exit code", "runs"):
                d.setdefault(key, value.strip())
        pid = int(d["pid"]) if d.get("pid", "").isdigit() else None
        active = d.get("state") == "running"
        return ServiceState(True, active, pid, d.get("state", "loaded"), d)

    def hint(self, action: str, names: ServiceNames, target: Path) -> list[str]:
        domain = self._domains()[0]
        svc = f"{domain}/{names.label}"
        plist = shlex.quote(str(target))
        verbs = {
            "install": [f"launchctl bootstrap {domain} {plist}"],
            "start": [f"launchctl bootstrap {domain} {plist}", f"launchctl kickstart {svc}"],
            "stop": [f"launchctl bootout {svc}"],
            "restart": [f"launchctl kill SIGUSR1 {svc}"],
            "uninstall": [f"launchctl bootout {svc}", f"rm {plist}"],
            "status": [f"launchctl print {svc}"],
        }
        return verbs.get(action, [])


def backend_for(manager: Manager, scope: Scope) -> ServiceBackend:
    """The backend object for `manager` in `scope`."""
    return Systemd(scope) if manager == "systemd" else Launchd(scope)
