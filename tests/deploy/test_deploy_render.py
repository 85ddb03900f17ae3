"""Rendered systemd units and launchd plists: valid, per profile, and stop timeouts that
outlast the drain."""

from __future__ import annotations

import configparser
import os
import plistlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gateway.service import build_spec, render, service_names
from gateway.service.naming import default_manager
from gateway.service.render import render_launchd, render_systemd, stop_timeout_s
from tests.deploy.conftest import HERMES

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")

# Directives the template may use, per section: a typo or an unknown key fails the test even
# where systemd-analyze is not installed.
KNOWN = {
    "Unit": {"Description", "After", "Wants", "StartLimitIntervalSec", "StartLimitBurst",
             "Documentation"},
    "Service": {"Type", "NotifyAccess", "ExecStart", "WorkingDirectory", "Environment",
                "User", "Group", "TimeoutStartSec", "WatchdogSec", "Restart", "RestartSec",
                "RestartForceExitStatus", "RestartPreventExitStatus", "KillSignal",
                "KillMode", "TimeoutStopSec", "StandardOutput", "StandardError",
                "SyslogIdentifier", "UMask", "NoNewPrivileges", "ProtectSystem", "ProtectHome",
                "PrivateTmp", "ReadWritePaths", "RestrictSUIDSGID", "LockPersonality"},
    "Install": {"WantedBy"},
}


def _spec(home: Path, *, manager: str = "systemd", scope: str = "user", drain: float = 30.0):
    return build_spec(home, manager=manager, scope=scope, drain_timeout_s=drain,  # type: ignore[arg-type]
                      connect_timeout_s=30.0, hermes=HERMES)


def _ini(text: str) -> dict[str, dict[str, list[str]]]:
    """A strict reading of a unit file: every line is a comment, a known [Section] or a
    Key=Value of a directive known for that section."""
    out: dict[str, dict[str, list[str]]] = {}
    section: str | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if m := re.fullmatch(r"\[(\w+)\]", line):
            section = m.group(1)
            assert section in KNOWN, f"line {n}: unknown section {line}"
            assert section not in out, f"line {n}: section repeated"
            out[section] = {}
            continue
        assert section is not None, f"line {n}: directive outside a section"
        key, sep, value = line.partition("=")
        assert sep and key == key.strip() and key in KNOWN[section], f"line {n}: {raw!r}"
        assert value.strip(), f"line {n}: empty value"
        assert "${" not in value, f"line {n}: unfilled placeholder"
        out[section].setdefault(key, []).append(value)
    return out


def _one(unit: dict[str, dict[str, list[str]]], section: str, key: str) -> str:
    values = unit[section][key]
    assert len(values) == 1, f"{key} set {len(values)} times"
    return values[0]


def _analyze(path: Path, scope: str, tmp_path: Path) -> None:
    assert SYSTEMD_ANALYZE is not None
    env = dict(os.environ)
    args = [SYSTEMD_ANALYZE, "verify", "--man=no"]
    if scope == "user":
        runtime = tmp_path / "xdg-runtime"
        runtime.mkdir(mode=0o700, exist_ok=True)
        env["XDG_RUNTIME_DIR"] = str(runtime)
        args.append("--user")
    done = subprocess.run([*args, str(path)], env=env, capture_output=True, text=True,
                          timeout=60)
    about_unit = [ln for ln in (done.stdout + done.stderr).splitlines() if path.name in ln]
    assert done.returncode == 0, done.stderr
    assert about_unit == [], "\n".join(about_unit)


@pytest.mark.parametrize("profile", [None, "work"])
@pytest.mark.parametrize("scope", ["user", "system"])
def test_systemd_unit_is_valid_and_names_the_profile(
    user_home: Path, tmp_path: Path, profile: str | None, scope: str
) -> None:
    home = user_home / ".hermes" if profile is None else user_home / ".hermes/profiles" / profile
    home.mkdir(parents=True)
    spec = _spec(home, scope=scope)
    text = render(spec)
    unit = _ini(text)
    expected = "hermes-gateway.service" if profile is None else f"hermes-gateway-{profile}.service"
    assert spec.target.name == expected
    if scope == "user":
        assert spec.target.parent == user_home / ".config/systemd/user"
        assert _one(unit, "Install", "WantedBy") == "default.target"
    else:
        assert spec.target.parent == Path("/etc/systemd/system")
        assert _one(unit, "Install", "WantedBy") == "multi-user.target"
    svc = unit["Service"]
    assert _one(unit, "Service", "Type") == "notify"
    assert _one(unit, "Service", "NotifyAccess") == "main"
    assert _one(unit, "Service", "ExecStart") == f"{HERMES.resolve()} gateway run"
    assert f"HERMES_HOME={home.resolve()}" in svc["Environment"]
    assert _one(unit, "Service", "Restart") == "on-failure"
    assert _one(unit, "Service", "RestartPreventExitStatus") == "78"
    assert _one(unit, "Service", "RestartForceExitStatus") == "75"
    assert _one(unit, "Service", "KillSignal") == "SIGTERM"
    assert int(_one(unit, "Service", "WatchdogSec")) > 0
    assert int(_one(unit, "Service", "TimeoutStopSec")) > 30
    assert _one(unit, "Service", "NoNewPrivileges") == "yes"
    assert _one(unit, "Service", "ProtectSystem") == "strict"
    assert _one(unit, "Service", "PrivateTmp") == "yes"
    assert str(home.resolve()) in svc["ReadWritePaths"]
    assert _one(unit, "Service", "SyslogIdentifier") == expected.removesuffix(".service")
    if profile is not None:  # the lock dir lives outside a named profile: writable too
        assert f"-{user_home / '.hermes/locks'}" in svc["ReadWritePaths"]
    if SYSTEMD_ANALYZE:
        path = tmp_path / expected
        path.write_text(text, encoding="utf-8")
        _analyze(path, scope, tmp_path)


@pytest.mark.parametrize("drain", [0.0, 30.0, 179.5, 600.0])
def test_stop_timeouts_outlast_the_drain(user_home: Path, drain: float) -> None:
    home = user_home / ".hermes"
    unit = _ini(render_systemd(_spec(home, drain=drain)))
    assert int(_one(unit, "Service", "TimeoutStopSec")) >= drain + 20
    plist = plistlib.loads(render_launchd(_spec(home, manager="launchd", drain=drain)).encode())
    assert plist["ExitTimeOut"] >= drain + 20
    assert stop_timeout_s(drain) == int(_one(unit, "Service", "TimeoutStopSec"))


@pytest.mark.parametrize("profile", [None, "work"])
def test_launchd_plist_parses_and_holds_the_keys(user_home: Path, profile: str | None) -> None:
    home = user_home / ".hermes" if profile is None else user_home / ".hermes/profiles" / profile
    spec = _spec(home, manager="launchd", drain=45)
    plist = plistlib.loads(render(spec).encode())
    label = "ai.hermes.gateway" if profile is None else f"ai.hermes.gateway.{profile}"
    assert plist["Label"] == label
    assert spec.target == user_home / "Library/LaunchAgents" / f"{label}.plist"
    assert plist["ProgramArguments"] == [str(HERMES.resolve()), "gateway", "run"]
    assert plist["EnvironmentVariables"]["HERMES_HOME"] == str(home.resolve())
    assert plist["KeepAlive"] == {"SuccessfulExit": False}
    assert plist["RunAtLoad"] is True
    assert plist["ThrottleInterval"] >= 10
    assert plist["ExitTimeOut"] > 45
    for key in ("StandardOutPath", "StandardErrorPath"):
        assert Path(plist[key]).parent == home.resolve() / "logs"
    assert "UserName" not in plist


def test_custom_home_gets_its_own_stable_name(user_home: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "srv" / "bot-a", tmp_path / "srv" / "bot-b"
    na, nb = service_names(a), service_names(b)
    assert na.profile is None and na.unit.startswith("hermes-gateway-home-")
    assert na.unit != nb.unit and na.label != nb.label
    assert service_names(a).unit == na.unit
    assert service_names(user_home / ".hermes").unit == "hermes-gateway.service"
    assert service_names(user_home / ".hermes/profiles/ops").label == "ai.hermes.gateway.ops"


def test_paths_with_spaces_and_percent_are_escaped(user_home: Path, tmp_path: Path) -> None:
    home = tmp_path / "my bots" / "100% hermes"
    home.mkdir(parents=True)
    unit = _ini(render_systemd(_spec(home)))
    assert f'"HERMES_HOME={str(home.resolve()).replace("%", "%%")}"' in unit["Service"][
        "Environment"]
    plist = plistlib.loads(render_launchd(_spec(home, manager="launchd")).encode())
    assert plist["EnvironmentVariables"]["HERMES_HOME"] == str(home.resolve())


def test_system_scope_runs_as_the_profile_owner(user_home: Path) -> None:
    home = user_home / ".hermes"
    home.mkdir()
    if os.geteuid() == 0:
        os.chown(home, 65534, 65534)  # nobody
    spec = _spec(home, scope="system")
    if home.stat().st_uid == 0:
        pytest.skip("profile owned by root")
    import pwd

    owner = pwd.getpwuid(home.stat().st_uid).pw_name
    unit = _ini(render_systemd(spec))
    assert _one(unit, "Service", "User") == owner
    plist = plistlib.loads(render_launchd(_spec(home, manager="launchd", scope="system"))
                           .encode())
    assert plist["UserName"] == owner
    assert spec.lock_dir == Path(pwd.getpwuid(home.stat().st_uid).pw_dir) / ".hermes/locks"


def test_default_manager_follows_the_host() -> None:
    assert default_manager("darwin") == "launchd"
    assert default_manager("linux") == "systemd"


def test_configparser_reads_the_unit(user_home: Path) -> None:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(render_systemd(_spec(user_home / ".hermes")))
    assert parser.sections() == ["Unit", "Service", "Install"]
