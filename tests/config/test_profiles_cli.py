"""`hermes profile …` through the real console script."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gateway.instance import running_pid
from tests.config.conftest import run_hermes, start_holder


def test_create_list_use_show(home_dir: Path) -> None:
    r = run_hermes(home_dir, "profile", "create", "work")
    assert r.returncode == 0, r.stderr
    work = home_dir / ".hermes" / "profiles" / "work"
    assert (work / ".env").is_file()

    listed = json.loads(run_hermes(home_dir, "profile", "list", "--json").stdout)
    assert [(p["name"], p["active"]) for p in listed] == [("default", True), ("work", False)]

    assert run_hermes(home_dir, "profile", "use", "work").returncode == 0
    listed = json.loads(run_hermes(home_dir, "profile", "list", "--json").stdout)
    assert [(p["name"], p["active"], p["sticky"]) for p in listed] == [
        ("default", False, False), ("work", True, True)]
    shown = json.loads(run_hermes(home_dir, "profile", "show", "--json").stdout)
    assert shown["name"] == "work" and shown["selected_by"] == "sticky"

    shown = json.loads(run_hermes(home_dir, "-p", "default", "profile", "show", "--json").stdout)
    assert shown["name"] == "default" and shown["selected_by"] == "flag"
    r = run_hermes(home_dir, "profile", "list")
    assert "work" in r.stdout and "*" in r.stdout


def test_invalid_names_refused_by_cli(home_dir: Path) -> None:
    for bad in ("../x", "A", ""):
        r = run_hermes(home_dir, "profile", "create", bad)
        assert r.returncode == 2, (bad, r.stderr)
        assert "Traceback" not in r.stderr
        r = run_hermes(home_dir, "-p", bad, "config", "check")
        assert r.returncode == 2, (bad, r.stderr)
    assert not (home_dir / ".hermes" / "profiles").exists()
    assert not (home_dir / "x").exists()


def test_env_var_hermes_home_and_flag(home_dir: Path, tmp_path: Path) -> None:
    run_hermes(home_dir, "profile", "create", "p1")
    custom = tmp_path / "elsewhere"
    shown = json.loads(
        run_hermes(home_dir, "profile", "show", "--json", HERMES_HOME=str(custom)).stdout
    )
    assert shown["home"] == str(custom.resolve()) and shown["selected_by"] == "env"
    shown = json.loads(run_hermes(home_dir, "-p", "p1", "profile", "show", "--json",
                                  HERMES_HOME=str(custom)).stdout)
    assert shown["name"] == "p1" and shown["selected_by"] == "flag"
    r = run_hermes(home_dir, "-p", "nope", "config", "check")
    assert r.returncode == 78 and "does not exist" in r.stderr


def test_delete_asks_without_yes(home_dir: Path) -> None:
    run_hermes(home_dir, "profile", "create", "keep")
    target = home_dir / ".hermes" / "profiles" / "keep"
    r = run_hermes(home_dir, "profile", "delete", "keep", input="n\n")
    assert r.returncode != 0
    assert target.is_dir()
    r = run_hermes(home_dir, "profile", "delete", "keep", input="y\n")
    assert r.returncode == 0, r.stderr
    assert not target.exists()


def test_delete_resets_sticky_and_default_is_protected(home_dir: Path) -> None:
    run_hermes(home_dir, "profile", "create", "gone")
    run_hermes(home_dir, "profile", "use", "gone")
    sticky = home_dir / ".hermes" / "active_profile"
    assert sticky.read_text().strip() == "gone"
    r = run_hermes(home_dir, "profile", "delete", "gone", "--yes")
    assert r.returncode == 0, r.stderr
    assert not sticky.exists()
    shown = json.loads(run_hermes(home_dir, "profile", "show", "--json").stdout)
    assert shown["name"] == "default"
    r = run_hermes(home_dir, "profile", "delete", "default", "--yes")
    assert r.returncode == 1 and (home_dir / ".hermes").is_dir()


def test_delete_stops_running_gateway_first(
    home_dir: Path, holders: list[subprocess.Popen[str]]
) -> None:
    run_hermes(home_dir, "profile", "create", "live")
    target = home_dir / ".hermes" / "profiles" / "live"
    holder = start_holder(target, home_dir)
    holders.append(holder)
    listed = json.loads(run_hermes(home_dir, "profile", "list", "--json").stdout)
    assert listed[1]["gateway_pid"] == holder.pid
    r = run_hermes(home_dir, "profile", "delete", "live", "--yes")
    assert r.returncode == 0, r.stderr
    assert holder.wait(timeout=10) is not None
    assert not target.exists()
    assert running_pid(target) is None
