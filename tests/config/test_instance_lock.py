"""Single-instance lock per profile and one poller per bot token."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gateway.instance import (
    AlreadyRunning,
    TokenInUse,
    acquire,
    acquire_token_lock,
    running_pid,
    stop_running,
    token_lock_path,
)
from gateway.paths import paths
from gateway.profiles import create_profile
from tests.config.conftest import start_holder

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"


def test_acquire_release_and_pid_file(home_dir: Path) -> None:
    home = create_profile("solo")
    assert running_pid(home) is None
    with acquire(home) as lock:
        assert lock.held
        assert paths(home).pid_file.read_text().strip() == str(os.getpid())
        assert running_pid(home) == os.getpid()
        with pytest.raises(AlreadyRunning):
            acquire(home)
    assert running_pid(home) is None
    assert not paths(home).pid_file.exists()
    acquire(home).release()


def test_second_acquire_fails_with_holder_pid(
    home_dir: Path, holders: list[subprocess.Popen[str]]
) -> None:
    home = create_profile("busy")
    holder = start_holder(home, home_dir)
    holders.append(holder)
    assert running_pid(home) == holder.pid
    with pytest.raises(AlreadyRunning) as err:
        acquire(home)
    assert err.value.pid == holder.pid
    assert str(holder.pid) in str(err.value) and "--replace" in str(err.value)


def test_replace_terminates_holder_and_takes_over(
    home_dir: Path, holders: list[subprocess.Popen[str]]
) -> None:
    home = create_profile("swap")
    holder = start_holder(home, home_dir)
    holders.append(holder)
    lock = acquire(home, replace=True, timeout=20)
    try:
        assert holder.wait(timeout=10) is not None
        assert running_pid(home) == os.getpid()
        assert paths(home).pid_file.read_text().strip() == str(os.getpid())
    finally:
        lock.release()


def test_replace_gives_up_when_holder_ignores_sigterm(
    home_dir: Path, holders: list[subprocess.Popen[str]]
) -> None:
    home = create_profile("stubborn")
    holder = start_holder(home, home_dir, ignore_term=True)
    holders.append(holder)
    with pytest.raises(AlreadyRunning) as err:
        acquire(home, replace=True, timeout=0.3)
    assert err.value.pid == holder.pid
    assert holder.poll() is None
    assert stop_running(home, timeout=0.3) is False


def test_stop_running(home_dir: Path, holders: list[subprocess.Popen[str]]) -> None:
    home = create_profile("stopme")
    assert stop_running(home, timeout=1) is True
    holder = start_holder(home, home_dir)
    holders.append(holder)
    assert stop_running(home, timeout=20) is True
    assert holder.wait(timeout=10) is not None
    assert running_pid(home) is None


def test_token_lock_is_machine_wide_across_profiles(
    home_dir: Path, holders: list[subprocess.Popen[str]]
) -> None:
    one = create_profile("one")
    two = create_profile("two")
    holder = start_holder(one, home_dir, token=TOKEN)
    holders.append(holder)
    with pytest.raises(TokenInUse) as err:
        acquire_token_lock("telegram", TOKEN, home=two)
    assert err.value.pid == holder.pid
    assert str(one) in str(err.value)
    assert TOKEN not in str(err.value)
    other = acquire_token_lock("telegram", TOKEN + "x", home=two)
    other.release()
    path = token_lock_path("telegram", TOKEN)
    assert path.parent == home_dir / ".hermes" / "locks"
    assert TOKEN not in path.name and "AAHdq" not in path.read_text()
    holder.kill()
    holder.wait(timeout=10)
    acquire_token_lock("telegram", TOKEN, home=two).release()


def test_token_lock_dir_override(home_dir: Path, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_LOCK_DIR", str(tmp_path / "locks"))
    with acquire_token_lock("slack", "xoxb-abc-123456789"):
        assert any((tmp_path / "locks").iterdir())
