"""The README's main-job command: `hermes demo` runs offline and exits 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_demo_runs_offline_and_shows_the_main_job(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("HERMES_HOME", None)
    hermes = Path(sys.executable).with_name("hermes")
    proc = subprocess.run([str(hermes), "demo"], env=env, capture_output=True, text=True,
                          timeout=120)
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "offline stand-in" in out
    assert "write_file(" in out                       # the tool call, as stored
    assert "mcp__news__headlines(" in out             # a local MCP server's tool (stdio)
    assert "[business] Chip maker reports record quarterly revenue" in out
    assert "Compressed:" in out                       # /compress rotated the session
    assert "Compressions: 1; lineage length: 2" in out
    assert "Lineage (newest first):" in out and " ← " in out
    assert "the demo works offline" in out            # what the tool wrote
    assert not (tmp_path / ".hermes").exists()        # throwaway: the user's home untouched
