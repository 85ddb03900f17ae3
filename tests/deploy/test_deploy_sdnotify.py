"""sd_notify over a real AF_UNIX datagram socket the test opens."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.sdnotify import SdNotifier


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(5)
    yield sock, str(path)
    sock.close()


def _recv(sock: socket.socket) -> str:
    return sock.recv(4096).decode()


def test_ready_watchdog_stopping_reach_the_socket(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    n = SdNotifier.from_env({"NOTIFY_SOCKET": path})
    assert n.enabled
    assert n.ready(status="3 adapters connected")
    assert _recv(sock).split("\n") == ["READY=1", "STATUS=3 adapters connected"]
    assert n.watchdog()
    assert _recv(sock) == "WATCHDOG=1"
    assert n.status("draining 2 turns\nsecond line")
    assert _recv(sock) == "STATUS=draining 2 turns second line"
    assert n.extend_timeout(1.5)
    assert _recv(sock) == "EXTEND_TIMEOUT_USEC=1500000"
    assert n.stopping()
    assert _recv(sock) == "STOPPING=1"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="abstract sockets: Linux only")
def test_abstract_socket_address() -> None:
    name = f"hermes-test-{os.getpid()}-{id(object())}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        assert SdNotifier.from_env({"NOTIFY_SOCKET": "@" + name}).ready()
        assert sock.recv(100) == b"READY=1"


def test_no_socket_is_a_silent_noop() -> None:
    n = SdNotifier.from_env({})
    assert not n.enabled
    assert n.ready() is False and n.watchdog() is False and n.stopping() is False
    assert n.watchdog_interval() is None


def test_vanished_or_bogus_socket_never_raises(tmp_path: Path) -> None:
    assert SdNotifier(str(tmp_path / "gone.sock")).ready() is False
    assert SdNotifier("vsock:2:1234").ready() is False
    assert SdNotifier("relative/path").watchdog() is False


def test_watchdog_interval_is_half_of_watchdog_usec(listener: tuple[socket.socket, str]) -> None:
    _, path = listener
    env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "60000000"}
    assert SdNotifier.from_env(env).watchdog_interval() == 30.0
    own = dict(env, WATCHDOG_PID=str(os.getpid()))
    assert SdNotifier.from_env(own).watchdog_interval() == 30.0
    other = dict(env, WATCHDOG_PID=str(os.getpid() + 1))
    assert SdNotifier.from_env(other).watchdog_interval() is None
    assert SdNotifier.from_env(dict(env, WATCHDOG_USEC="junk")).watchdog_interval() is None


def test_unset_environment_removes_the_variables(
    listener: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, path = listener
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    monkeypatch.setenv("WATCHDOG_USEC", "2000000")
    n = SdNotifier.from_env(unset_environment=True)
    assert n.enabled and n.watchdog_interval() == 1.0
    assert "NOTIFY_SOCKET" not in os.environ and "WATCHDOG_USEC" not in os.environ


async def test_run_watchdog_pings_only_while_healthy(
    listener: tuple[socket.socket, str],
) -> None:
    sock, path = listener
    sock.setblocking(False)
    n = SdNotifier(path, watchdog_usec=2_000_000)
    state = {"healthy": False, "checks": 0}

    def healthy() -> bool:
        state["checks"] += 1
        if state["checks"] == 3:
            raise RuntimeError("probe failed")  # counts as unhealthy
        return state["healthy"]

    task = asyncio.create_task(n.run_watchdog(healthy, interval=0.01))
    while state["checks"] < 5:
        await asyncio.sleep(0.01)
    with pytest.raises(BlockingIOError):
        sock.recv(100)  # unhealthy: nothing was sent
    state["healthy"] = True
    target = state["checks"] + 3
    while state["checks"] < target:
        await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert sock.recv(100) == b"WATCHDOG=1"


async def test_run_watchdog_returns_without_a_watchdog(
    listener: tuple[socket.socket, str],
) -> None:
    _, path = listener
    await asyncio.wait_for(SdNotifier(path).run_watchdog(lambda: True), timeout=5)
    await asyncio.wait_for(SdNotifier(None, watchdog_usec=10).run_watchdog(lambda: True), 5)
