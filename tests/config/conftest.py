"""Fixtures for config / profiles / logging / instance tests: every test gets its own HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.config.redact import clear_registered_secrets
from gateway.paths import set_home

REPO = Path(__file__).resolve().parents[2]
HERMES = REPO / ".venv" / "bin" / "hermes"
PYTHON = Path(sys.executable)


@pytest.fixture
def home_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh HOME with no HERMES_HOME; `~/.hermes` lives inside it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.delenv("HERMES_LOCK_DIR", raising=False)
    set_home(None)
    yield home
    set_home(None)
    clear_registered_secrets()


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(HOME=str(home), PYTHONDONTWRITEBYTECODE="1")
    env.update(extra)
    return env


def run_hermes(
    home: Path, *args: str, input: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run the real `.venv/bin/hermes` with HOME pointed at `home`."""
    return subprocess.run(
        [str(HERMES), *args],
        env=cli_env(home, **env),
        input=input if input is not None else "",
        capture_output=True,
        text=True,
        timeout=60,
    )


HOLDER = """
import signal, sys, time
from pathlib import Path
from gateway.instance import acquire, acquire_token_lock
if sys.argv[2] == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
lock = acquire(Path(sys.argv[1]))
if len(sys.argv) > 3:
    tok = acquire_token_lock("telegram", sys.argv[3], home=Path(sys.argv[1]))
print("ready", flush=True)
time.sleep(120)
"""


def start_holder(
    home: Path, user_home: Path, *, ignore_term: bool = False, token: str | None = None
) -> subprocess.Popen[str]:
    """A subprocess that takes the profile lock of `home` (and optionally a token lock),
    prints `ready`, then sleeps."""
    args = [str(PYTHON), "-c", HOLDER, str(home), "ignore-term" if ignore_term else "normal"]
    if token:
        args.append(token)
    proc = subprocess.Popen(
        args, env=cli_env(user_home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise AssertionError(f"holder failed: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return proc


@pytest.fixture
def holders() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)
        for s in (p.stdout, p.stderr):
            if s is not None:
                s.close()
