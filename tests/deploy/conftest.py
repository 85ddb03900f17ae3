"""Fixtures for the deploy tests: a private HOME, the service CLI on a bare typer app, and
stub `systemctl` / `launchctl` executables that record their argv."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer

from gateway.cli import bootstrap, service_cmd
from gateway.config.redact import clear_registered_secrets
from gateway.paths import set_home

REPO = Path(__file__).resolve().parents[2]
HERMES = REPO / ".venv" / "bin" / "hermes"
if not HERMES.exists():  # a venv elsewhere: the console script next to this interpreter
    HERMES = Path(sys.executable).parent / "hermes"

STUB = """#!/bin/sh
printf '%s\\n' "$*" >> "{log}"
case "$1 $2" in
  "--user show"|"show "*)
    printf 'LoadState=loaded\\nActiveState=active\\nSubState=running\\nMainPID=4242\\n'
    printf 'NRestarts=0\\nExecMainStatus=0\\nUnitFileState=enabled\\n';;
  "print "*)
    printf '{{\\n\\tstate = running\\n\\tpid = 4343\\n\\tlast exit code = 0\\n}}\\n';;
esac
exit {code}
"""


@dataclass
class Stubs:
    """A PATH directory of recording stubs; `calls()` returns one argv string per call."""

    bin: Path
    log: Path

    def add(self, name: str, *, code: int = 0) -> Path:
        path = self.bin / name
        path.write_text(STUB.format(log=self.log, code=code), encoding="utf-8")
        path.chmod(0o755)
        return path

    def calls(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh HOME (no HERMES_HOME, no XDG_CONFIG_HOME, no sd_notify variables)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("HERMES_HOME", "HERMES_LOCK_DIR", "XDG_CONFIG_HOME", "NOTIFY_SOCKET",
                "WATCHDOG_USEC", "WATCHDOG_PID"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(bootstrap, "_STATE", None)
    set_home(None)
    yield home
    set_home(None)
    clear_registered_secrets()


@pytest.fixture
def stubs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Stubs:
    """PATH holds only the stub directory (so the real systemctl/loginctl are never run)."""
    d = tmp_path / "stub-bin"
    d.mkdir()
    monkeypatch.setenv("PATH", str(d))
    return Stubs(d, tmp_path / "stub-calls.log")


@pytest.fixture
def cli() -> typer.Typer:
    """The service commands on their own typer app (as `hermes gateway …` would have them)."""
    app = typer.Typer()
    service_cmd.register(app)
    return app


def use_profile(user_home: Path, monkeypatch: pytest.MonkeyPatch, name: str | None) -> Path:
    """Select profile `name` (None = default) the way `hermes -p` ends up: via HERMES_HOME."""
    root = user_home / ".hermes"
    home = root if name is None else root / "profiles" / name
    home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HERMES_HOME", str(home))
    return home


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HERMES_", "NOTIFY_SOCKET", "WATCHDOG_"))}
    env.update(HOME=str(home), PYTHONDONTWRITEBYTECODE="1")
    env.update(extra)
    return env


def start_gateway(
    home: Path, profile_home: Path, log: Path, **env: str
) -> subprocess.Popen[bytes]:
    """The real `hermes gateway run` for the profile at `profile_home`; stdout and stderr go
    to `log` (a file, not a pipe: a full pipe would block the gateway's logging)."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(HERMES), "gateway", "run"],
            env=cli_env(home, HERMES_HOME=str(profile_home), **env),
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
        )
