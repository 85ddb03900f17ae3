"""`hermes gateway run` starts without typer (issue 21: start-up), in exactly the forms a
service manager uses; everything else, help included, still goes through the typer app, and
both paths report a refused start the same way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gateway.cli.entry import ServeArgs, serve_args

PROBE = """
import gc, sys
sys.argv = ["hermes", *sys.argv[1:]]
from gateway.cli.entry import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code
print("EXIT", code, "TYPER", "typer" in sys.modules, "GC", gc.isenabled())
"""


@pytest.mark.parametrize(("argv", "expected"), [
    (["gateway", "run"], ServeArgs(None, False)),
    (["gateway", "run", "--replace"], ServeArgs(None, True)),
    (["-p", "work", "gateway", "run"], ServeArgs("work", False)),
    (["--profile", "work", "gateway", "run", "--replace"], ServeArgs("work", True)),
    (["--profile=work", "gateway", "run"], ServeArgs("work", False)),
    (["gateway", "run", "--help"], None),
    (["gateway", "run", "--replace", "--replace"], None),
    (["--log-format", "json", "gateway", "run"], None),
    (["-p", "--help", "gateway", "run"], None),
    (["--profile=", "gateway", "run"], None),
    (["gateway", "status"], None),
    (["gateway"], None),
    ([], None),
])
def test_only_the_service_forms_take_the_fast_path(argv: list[str],
                                                    expected: ServeArgs | None) -> None:
    assert serve_args(argv) == expected


def _run(argv: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                          timeout=120, env={"HERMES_HOME": str(home), "PATH": "/usr/bin:/bin"})


def test_a_refused_start_reads_the_same_on_both_paths_and_only_typer_is_skipped(
        tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.yaml").write_text("gateway:\n  health: {port: 0}\n", encoding="utf-8")
    fast = _run(["gateway", "run"], home)
    assert "EXIT 78 TYPER False GC True" in fast.stdout, fast.stdout + fast.stderr
    assert "no platform" in fast.stderr.lower()
    # --log-format is not a fast form: the typer app runs the same command
    slow = _run(["--log-format", "json", "gateway", "run"], home)
    assert "EXIT 78 TYPER True GC True" in slow.stdout, slow.stdout + slow.stderr
    assert slow.stderr == fast.stderr


def test_a_bad_profile_name_is_refused_on_the_fast_path_as_by_the_app(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    fast = _run(["-p", "no/such", "gateway", "run"], home)
    slow = _run(["-p", "no/such", "gateway", "status"], home)
    assert "EXIT 2 TYPER False" in fast.stdout, fast.stdout + fast.stderr
    assert fast.stderr.startswith("hermes: error:") and fast.stderr == slow.stderr
