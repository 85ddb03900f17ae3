"""`hermes chat --demo` on a fresh clone: the offline stand-in model in a throwaway profile.
It answers, leaves the user's profile (HERMES_HOME) and the temp folder as they were, and
needs no network but loopback (run once inside a network namespace that has nothing else);
one that cannot start says why and exits."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chat.conftest import HERMES, chat_env

REPLY = ("[offline stand-in model] You said: “hello”. This is turn 1 of our conversation; "
         "I keep every message in state.db.")


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A short TMPDIR: the throwaway profile's Unix socket path must fit in 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="hcd-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _demo(tmp_path: Path, scratch: Path, prefix: list[str], timeout: float = 120,
          ) -> tuple[subprocess.CompletedProcess[str], Path]:
    profile = tmp_path / "profile"
    profile.mkdir()
    env = {**chat_env(tmp_path / "home"), "HERMES_HOME": str(profile), "TMPDIR": str(scratch)}
    proc = subprocess.run([*prefix, str(HERMES), "chat", "--demo", "-q", "hello", "--json"],
                          env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    return proc, profile


def _check(proc: subprocess.CompletedProcess[str], profile: Path, scratch: Path,
           home: Path) -> None:
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["ok"] is True and out["error"] is None
    assert out["reply"] == REPLY
    assert out["usage"]["input_tokens"] > 0 and out["usage"]["output_tokens"] > 0
    assert list(profile.iterdir()) == []        # the user's profile is not touched
    assert list(scratch.iterdir()) == []        # the throwaway profile is gone
    assert not (home / ".hermes").exists()


def test_chat_demo_answers_in_a_throwaway_profile(tmp_path: Path, scratch: Path) -> None:
    proc, profile = _demo(tmp_path, scratch, [])
    _check(proc, profile, scratch, tmp_path / "home")


def test_chat_demo_that_cannot_start_exits_with_the_error(tmp_path: Path) -> None:
    """A TMPDIR so long that the cli adapter's socket path does not fit: the chat-only
    gateway fails to start, and `hermes chat` says so and exits (it used to hang)."""
    scratch = tmp_path / ("x" * 90)
    scratch.mkdir()
    proc, profile = _demo(tmp_path, scratch, [], timeout=90)
    assert proc.returncode == 1
    assert "hermes: error:" in proc.stderr and "adapter" in proc.stderr
    assert list(scratch.iterdir()) == [] and list(profile.iterdir()) == []


def _netns_prefix() -> list[str] | None:
    """A command prefix that runs in new user + network namespaces whose only interface is
    loopback (brought up), or None when the host does not allow it."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if unshare is None or ip is None:
        return None
    probe = subprocess.run([unshare, "-rn", ip, "link", "set", "lo", "up"],
                           capture_output=True, timeout=10)
    if probe.returncode != 0:
        return None
    return [unshare, "-rn", "sh", "-c", f'{ip} link set lo up && exec "$@"', "netns"]


def test_chat_demo_needs_no_network_but_loopback(tmp_path: Path, scratch: Path) -> None:
    prefix = _netns_prefix()
    if prefix is None:
        pytest.skip("this host allows no unprivileged network namespace (unshare -rn)")
    links = subprocess.run([*prefix, "ip", "-o", "link"], capture_output=True, text=True,
                           timeout=10).stdout.splitlines()
    assert len(links) == 1 and ": lo:" in links[0]  # nothing to reach but loopback
    proc, profile = _demo(tmp_path, scratch, prefix)
    _check(proc, profile, scratch, tmp_path / "home")
