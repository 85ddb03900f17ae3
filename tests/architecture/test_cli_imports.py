"""The CLI's quick commands import no platform SDK, no model SDK and no event loop policy
(issue 21, deliverable 4): `hermes --help` must stay fast on a small host."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("telegram", "slack_bolt", "slack_sdk", "discord", "openai", "aiohttp", "httpx2",
         "uvloop", "prometheus_client", "re2", "confusable_homoglyphs", "structlog")

PROBE = """
import sys
sys.argv = ["hermes", *sys.argv[1:]]
from gateway.cli.main import run
try:
    run()
except SystemExit:
    pass
print("LOADED", sorted({m.split(".")[0] for m in sys.modules} & set(%r)))
"""


#: `--help` needs neither the event loop nor storage, nor rich (plain help).
HELP_HEAVY = (*HEAVY, "asyncio", "ssl", "aiosqlite", "storage", "rich")


@pytest.mark.parametrize(("argv", "heavy"), [(["--help"], HELP_HEAVY), (["config", "check"], HEAVY),
                                             (["sessions", "list"], HEAVY)])
def test_quick_commands_import_no_sdk(argv: list[str], heavy: tuple[str, ...],
                                      tmp_path: object) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE % (heavy,), *argv], capture_output=True,
                         text=True, timeout=60, env={"HERMES_HOME": str(tmp_path),
                                                     "PATH": "/usr/bin:/bin"})
    line = next(x for x in out.stdout.splitlines() if x.startswith("LOADED"))
    assert line == "LOADED []", f"hermes {' '.join(argv)} imported {line[7:]}"
