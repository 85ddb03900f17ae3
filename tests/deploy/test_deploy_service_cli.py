"""`hermes gateway install|uninstall|start|stop|restart|status` with the manager replaced by
recording stubs on PATH: real files are written and removed in a private HOME."""

from __future__ import annotations

import plistlib
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gateway.service import uninstall_service_for
from tests.deploy.conftest import Stubs, use_profile

runner = CliRunner()
UNIT_DIR = Path(".config/systemd/user")


def _files(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*")}


def test_dry_run_prints_unit_and_path_and_writes_nothing(
    user_home: Path, cli: typer.Typer, stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = use_profile(user_home, monkeypatch, "work")
    stubs.add("systemctl")
    before = _files(user_home)
    r = runner.invoke(cli, ["install", "--dry-run", "--manager", "systemd"])
    assert r.exit_code == 0, r.output
    target = user_home / UNIT_DIR / "hermes-gateway-work.service"
    assert str(target) in r.stderr
    assert r.stdout.startswith("# Hermes Gateway for profile \"work\"")
    assert "Type=notify" in r.stdout and f"HERMES_HOME={home}" in r.stdout
    assert _files(user_home) == before
    assert stubs.calls() == []


def test_dry_run_launchd_system_prints_plist(
    user_home: Path, cli: typer.Typer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_profile(user_home, monkeypatch, None)
    r = runner.invoke(cli, ["install", "--dry-run", "--manager", "launchd", "--system"])
    assert r.exit_code == 0, r.output
    assert "/Library/LaunchDaemons/ai.hermes.gateway.plist" in r.stderr
    assert plistlib.loads(r.stdout.encode())["Label"] == "ai.hermes.gateway"
    assert not Path("/Library/LaunchDaemons/ai.hermes.gateway.plist").exists()


def test_install_then_uninstall_systemd_user(
    user_home: Path, cli: typer.Typer, stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = use_profile(user_home, monkeypatch, "work")
    stubs.add("systemctl")
    r = runner.invoke(cli, ["install", "--manager", "systemd"])
    assert r.exit_code == 0, r.output
    unit = user_home / UNIT_DIR / "hermes-gateway-work.service"
    text = unit.read_text()
    assert f"Environment=HERMES_HOME={home}" in text
    assert oct(unit.stat().st_mode & 0o777) == "0o644"
    assert (user_home / ".hermes/locks").is_dir() and (home / "logs").is_dir()
    assert stubs.calls() == ["--user daemon-reload",
                             "--user enable --now hermes-gateway-work.service"]

    r = runner.invoke(cli, ["status", "--manager", "systemd"])
    assert "hermes-gateway-work.service (user) active (running) pid 4242" in r.stdout
    assert "gateway:  not running" in r.stdout
    assert "readyz:" in r.stdout
    assert r.exit_code == 3

    for verb in ("start", "stop", "restart"):
        r = runner.invoke(cli, [verb, "--manager", "systemd"])
        assert r.exit_code == 0, r.output
    assert stubs.calls()[-3:] == [f"--user {v} hermes-gateway-work.service"
                                  for v in ("start", "stop", "restart")]

    r = runner.invoke(cli, ["uninstall", "--manager", "systemd"])
    assert r.exit_code == 0, r.output
    assert not unit.exists()
    assert stubs.calls()[-2:] == ["--user disable --now hermes-gateway-work.service",
                                  "--user daemon-reload"]
    r = runner.invoke(cli, ["uninstall", "--manager", "systemd"])
    assert "no systemd service is installed" in r.stdout


def test_install_no_start_enables_only(
    user_home: Path, cli: typer.Typer, stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_profile(user_home, monkeypatch, None)
    stubs.add("systemctl")
    r = runner.invoke(cli, ["install", "--manager", "systemd", "--no-start"])
    assert r.exit_code == 0, r.output
    assert (user_home / UNIT_DIR / "hermes-gateway.service").is_file()
    assert stubs.calls()[-1] == "--user enable hermes-gateway.service"


def test_install_launchd_user_writes_plist_and_bootstraps(
    user_home: Path, cli: typer.Typer, stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = use_profile(user_home, monkeypatch, "ops")
    stubs.add("launchctl")
    r = runner.invoke(cli, ["install", "--manager", "launchd"])
    assert r.exit_code == 0, r.output
    plist_path = user_home / "Library/LaunchAgents/ai.hermes.gateway.ops.plist"
    plist = plistlib.loads(plist_path.read_bytes())
    assert plist["EnvironmentVariables"]["HERMES_HOME"] == str(home)
    calls = stubs.calls()
    assert any(c.startswith("bootout gui/") and c.endswith("/ai.hermes.gateway.ops")
               for c in calls)  # the stub says it is loaded: reload it
    assert calls[-1].startswith("bootstrap gui/") and calls[-1].endswith(str(plist_path))

    r = runner.invoke(cli, ["restart", "--manager", "launchd"])
    assert r.exit_code == 0, r.output
    assert stubs.calls()[-1].startswith("kill SIGUSR1 gui/")

    r = runner.invoke(cli, ["status", "--manager", "launchd"])
    assert "ai.hermes.gateway.ops (user) running pid 4343" in r.stdout

    r = runner.invoke(cli, ["uninstall", "--manager", "launchd"])
    assert r.exit_code == 0, r.output
    assert not plist_path.exists()
    assert stubs.calls()[-1].startswith("bootout gui/")


def test_manager_missing_writes_file_and_says_what_to_run(
    user_home: Path, cli: typer.Typer, stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_profile(user_home, monkeypatch, "work")
    r = runner.invoke(cli, ["install", "--manager", "systemd"])
    assert r.exit_code == 0, r.output
    assert (user_home / UNIT_DIR / "hermes-gateway-work.service").is_file()
    assert "systemd is not available here" in r.stderr
    assert "systemctl --user enable --now hermes-gateway-work.service" in r.stderr

    r = runner.invoke(cli, ["start", "--manager", "systemd"])
    assert r.exit_code == 1
    assert "systemctl --user start hermes-gateway-work.service" in r.stderr


def test_manager_failure_is_reported_with_exit_1(
    user_home: Path, cli: typer.Typer, stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_profile(user_home, monkeypatch, None)
    stubs.add("systemctl", code=1)
    r = runner.invoke(cli, ["install", "--manager", "systemd"])
    assert r.exit_code == 1
    assert "failed" in r.stdout and "systemctl --user daemon-reload" in r.stderr
    r = runner.invoke(cli, ["restart", "--manager", "systemd"])
    assert r.exit_code == 1 and "restart failed" in r.stderr


def test_not_installed(
    user_home: Path, cli: typer.Typer, stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_profile(user_home, monkeypatch, "work")
    stubs.add("systemctl")
    r = runner.invoke(cli, ["start", "--manager", "systemd"])
    assert r.exit_code == 1
    assert "hermes -p work gateway install" in r.stderr
    r = runner.invoke(cli, ["stop", "--manager", "systemd"])
    assert r.exit_code == 0 and "no gateway runs" in r.stdout
    r = runner.invoke(cli, ["status", "--manager", "systemd"])
    assert r.exit_code == 3 and "not installed" in r.stdout
    assert stubs.calls() == []


def test_usage_errors(user_home: Path, cli: typer.Typer, monkeypatch: pytest.MonkeyPatch) -> None:
    use_profile(user_home, monkeypatch, None)
    assert runner.invoke(cli, ["install", "--user", "--system", "--dry-run"]).exit_code == 2
    assert runner.invoke(cli, ["install", "--manager", "upstart", "--dry-run"]).exit_code == 2


def test_broken_config_refuses_install(
    user_home: Path, cli: typer.Typer, stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = use_profile(user_home, monkeypatch, None)
    (home / "config.yaml").write_text("gateway: {drain_timeout_s: -5}\n")
    r = runner.invoke(cli, ["install", "--manager", "systemd"])
    assert r.exit_code == 78
    assert "drain_timeout_s" in r.stderr
    assert not (user_home / UNIT_DIR).exists()


def test_drain_timeout_from_config_sets_the_stop_timeout(
    user_home: Path, cli: typer.Typer, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = use_profile(user_home, monkeypatch, None)
    (home / "config.yaml").write_text("gateway: {drain_timeout_s: 180}\n")
    r = runner.invoke(cli, ["install", "--dry-run", "--manager", "systemd"])
    stop = next(ln for ln in r.stdout.splitlines() if ln.startswith("TimeoutStopSec="))
    assert int(stop.split("=")[1]) > 180


def test_uninstall_service_for_removes_the_profiles_unit_only(
    user_home: Path, cli: typer.Typer, stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    stubs.add("systemctl")
    for name in ("work", "play"):
        use_profile(user_home, monkeypatch, name)
        assert runner.invoke(cli, ["install", "--manager", "systemd"]).exit_code == 0
    removed = uninstall_service_for(user_home / ".hermes/profiles/work", manager="systemd")
    assert removed == [user_home / UNIT_DIR / "hermes-gateway-work.service"]
    assert not removed[0].exists()
    assert (user_home / UNIT_DIR / "hermes-gateway-play.service").is_file()
    assert "--user disable --now hermes-gateway-work.service" in stubs.calls()
    assert uninstall_service_for(user_home / ".hermes/profiles/work", manager="systemd") == []
