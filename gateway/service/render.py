"""Fill the systemd unit / launchd plist templates (`deploy/`) for one profile.

Pure: nothing here writes files or runs commands. The stop timeout always exceeds the drain
(`gateway.drain_timeout_s` + `STOP_MARGIN_S`), so a manager never SIGKILLs a draining
gateway (a killed drain used to leave a stale lock and a restart loop).
"""

from __future__ import annotations

import grp
import math
import os
import plistlib
import pwd
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from xml.sax.saxutils import escape

from gateway.paths import locks_dir
from gateway.service.errors import ServiceError
from gateway.service.naming import Manager, Scope, ServiceNames, service_names, unit_dir

__all__ = [
    "STOP_MARGIN_S",
    "WATCHDOG_S",
    "ServiceSpec",
    "build_spec",
    "hermes_executable",
    "render",
    "render_launchd",
    "render_systemd",
    "stop_timeout_s",
    "template_text",
]

STOP_MARGIN_S = 30
"""Seconds a manager waits beyond the drain before it kills (teardown + slack)."""
WATCHDOG_S = 60
THROTTLE_S = 30
_BASE_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
_TEMPLATES = {
    "systemd": Path("systemd") / "hermes-gateway.service.tmpl",
    "launchd": Path("launchd") / "ai.hermes.gateway.plist.tmpl",
}


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """Everything a template needs for one profile, manager and scope."""

    names: ServiceNames
    manager: Manager
    scope: Scope
    hermes: Path
    drain_timeout_s: float
    connect_timeout_s: float
    lock_dir: Path
    target: Path
    run_as: str | None = None
    run_as_group: str | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.names.home

    @property
    def stop_timeout_s(self) -> int:
        return stop_timeout_s(self.drain_timeout_s)

    @property
    def log_paths(self) -> tuple[Path, Path]:
        """launchd stdout / stderr files, inside the profile's `logs/`."""
        logs = self.home / "logs"
        return logs / "launchd.out.log", logs / "launchd.err.log"


def stop_timeout_s(drain_timeout_s: float) -> int:
    """Whole seconds a manager should wait for a stop: the drain plus `STOP_MARGIN_S`."""
    return math.ceil(max(0.0, drain_timeout_s)) + STOP_MARGIN_S


def hermes_executable() -> Path:
    """Absolute path of the `hermes` console script running now (or on PATH, or next to
    this Python). Raises ServiceError when none is found."""
    candidates: list[str | None] = []
    argv0 = sys.argv[0] if sys.argv else ""
    if Path(argv0).name.startswith("hermes"):
        candidates.append(argv0)
    candidates.append(str(Path(sys.executable).parent / "hermes"))
    candidates.append(shutil.which("hermes"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return Path(c).resolve()
    raise ServiceError(
        "cannot find the `hermes` executable; install the package (pip install hermes-gateway) "
        "and run this command through it"
    )


def _owner(home: Path) -> tuple[str | None, str | None, Path | None]:
    """(user, group, user home) owning `home`; (None, None, None) for root or unknown."""
    probe = home if home.exists() else Path(os.path.expanduser("~"))
    try:
        st = probe.stat()
        if st.st_uid == 0:
            return None, None, None
        pw = pwd.getpwuid(st.st_uid)
        group = grp.getgrgid(st.st_gid).gr_name
    except (OSError, KeyError):
        return None, None, None
    return pw.pw_name, group, Path(pw.pw_dir)


def build_spec(
    home: Path,
    *,
    manager: Manager,
    scope: Scope,
    drain_timeout_s: float,
    connect_timeout_s: float = 30.0,
    hermes: Path | None = None,
) -> ServiceSpec:
    """Describe the service of the profile at `home`. For the system scope the service runs
    as the owner of `home` (root only when root owns it). Raises ServiceError."""
    names = service_names(home)
    exe = hermes if hermes is not None else hermes_executable()
    extra: dict[str, str] = {}
    if os.environ.get("HERMES_LOCK_DIR"):
        extra["HERMES_LOCK_DIR"] = str(locks_dir())
    run_as = group = None
    lock_dir = locks_dir()
    user_home: Path | None = None
    if scope == "system":
        run_as, group, user_home = _owner(names.home)
        if user_home is not None and "HERMES_LOCK_DIR" not in extra:
            lock_dir = user_home / ".hermes" / "locks"
    target = unit_dir(manager, scope) / names.file_name(manager)
    return ServiceSpec(
        names=names, manager=manager, scope=scope, hermes=exe,
        drain_timeout_s=drain_timeout_s, connect_timeout_s=connect_timeout_s,
        lock_dir=lock_dir, target=target, run_as=run_as, run_as_group=group, extra_env=extra,
    )


def template_text(manager: Manager) -> str:
    """The raw template for `manager`, from the installed package data or the repo's
    `deploy/`. Raises ServiceError when it is missing."""
    rel = _TEMPLATES[manager]
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates" / rel.name, here.parents[1] / "deploy" / rel):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise ServiceError(f"service template {rel} is missing from this installation")


def _check(value: str) -> str:
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ServiceError(f"path or value contains control characters: {value!r}")
    return value


def _sd_word(value: str, *, in_exec: bool = False) -> str:
    """One systemd word: `%` specifiers (and `$` in Exec lines) escaped, quoted if needed."""
    v = _check(value).replace("%", "%%")
    if in_exec:
        v = v.replace("$", "$$")
    if any(c.isspace() or c in "\"'\\;" for c in v):
        v = '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return v


def _within(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def render_systemd(spec: ServiceSpec) -> str:
    """The unit file text. Raises ServiceError for unusable paths."""
    home = spec.home
    exec_start = " ".join(_sd_word(w, in_exec=True) for w in (str(spec.hermes), "gateway", "run"))
    env = [f"\nEnvironment={_sd_word(f'{k}={v}')}" for k, v in sorted(spec.extra_env.items())]
    rw = [f"ReadWritePaths={_sd_word(str(home))}"]
    if not _within(spec.lock_dir, home):
        rw.append(f"ReadWritePaths={_sd_word('-' + str(spec.lock_dir))}")
    user_lines = ""
    if spec.scope == "system" and spec.run_as:
        user_lines = f"\nUser={_sd_word(spec.run_as)}"
        if spec.run_as_group:
            user_lines += f"\nGroup={_sd_word(spec.run_as_group)}"
    values = {
        "profile": _check(spec.names.display),
        "exec_start": exec_start,
        "working_directory": _sd_word(str(home)),
        "env_home": _sd_word(f"HERMES_HOME={home}"),
        "extra_environment": "".join(env),
        "user_lines": user_lines,
        "timeout_start_s": str(math.ceil(spec.connect_timeout_s) + 60),
        "watchdog_s": str(WATCHDOG_S),
        "drain_s": f"{spec.drain_timeout_s:g}",
        "timeout_stop_s": str(spec.stop_timeout_s),
        "unit_base": spec.names.unit_base,
        "read_write_paths": "\n".join(rw),
        "wanted_by": "multi-user.target" if spec.scope == "system" else "default.target",
    }
    return Template(template_text("systemd")).substitute(values)


def render_launchd(spec: ServiceSpec) -> str:
    """The plist text (checked with plistlib). Raises ServiceError for unusable paths."""
    out, err = spec.log_paths
    path_env = ":".join(dict.fromkeys([str(spec.hermes.parent), *_BASE_PATH.split(":")]))
    extra = "".join(
        f"\n    <key>{escape(_check(k))}</key>\n    <string>{escape(_check(v))}</string>"
        for k, v in sorted(spec.extra_env.items())
    )
    user_keys = ""
    if spec.scope == "system" and spec.run_as:
        user_keys = f"\n  <key>UserName</key>\n  <string>{escape(_check(spec.run_as))}</string>"
        if spec.run_as_group:
            user_keys += (f"\n  <key>GroupName</key>\n"
                          f"  <string>{escape(_check(spec.run_as_group))}</string>")
    values = {
        "profile": escape(_check(spec.names.display)).replace("--", "- -"),
        "label": escape(spec.names.label),
        "hermes": escape(_check(str(spec.hermes))),
        "home": escape(_check(str(spec.home))),
        "path": escape(_check(path_env)),
        "extra_environment": extra,
        "working_directory": escape(str(spec.home)),
        "user_keys": user_keys,
        "throttle_s": str(THROTTLE_S),
        "drain_s": f"{spec.drain_timeout_s:g}",
        "exit_timeout_s": str(spec.stop_timeout_s),
        "stdout_path": escape(_check(str(out))),
        "stderr_path": escape(_check(str(err))),
    }
    text = Template(template_text("launchd")).substitute(values)
    try:
        plistlib.loads(text.encode("utf-8"))
    except Exception as exc:  # a template bug, not user input: report it plainly
        raise ServiceError(f"rendered plist does not parse: {exc}") from exc
    return text


def render(spec: ServiceSpec) -> str:
    """Render the file for `spec.manager`. Raises ServiceError."""
    return render_systemd(spec) if spec.manager == "systemd" else render_launchd(spec)
