"""The README's main-job command: `hermes demo` runs offline and exits 0."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest


def test_demo_runs_offline_shows_the_main_job_and_keeps_the_gateway_up(tmp_path: Path) -> None:
    """One run of `hermes demo --keep` (the script is the same without --keep; the demo is
    one of the suite's costliest tests): the main job offline, then the gateway stays up,
    API and dashboard, until Ctrl-C."""
    env = {**os.environ, "HOME": str(tmp_path), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("HERMES_HOME", None)
    hermes = Path(sys.executable).with_name("hermes")
    proc = subprocess.Popen([str(hermes), "demo", "--keep"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        seen: list[str] = []
        for line in proc.stdout:
            seen.append(line)
            if "Press Ctrl-C" in line:
                break
        text = out = "".join(seen)
        assert "offline stand-in" in out
        assert "write_file(" in out                       # the tool call, as stored
        assert "mcp__news__headlines(" in out             # a local MCP server's tool (stdio)
        assert "[business] Chip maker reports record quarterly revenue" in out
        assert "Compressed:" in out                       # /compress rotated the session
        before, after = re.search(r"Compressed: ([\d,]+) → ([\d,]+) tokens \(saved", out).groups()
        assert int(after.replace(",", "")) < int(before.replace(",", ""))  # it saved tokens
        assert "Compressions: 1; lineage length: 2" in out
        assert "Lineage (newest first):" in out and " ← " in out
        assert "the demo works offline" in out            # what the tool wrote
        assert "web_extract(" in out                      # the local page, read through the tool
        assert "Headlines: Morning ferry moves to 07:45; Tram line 4 closed" in out
        # A skill the agent saved (skill_manage) is loaded in a later session (skill_view).
        saved = out.index("saved the steps as the skill `release-app`")
        fresh = out.index("New session started", saved)
        used = out.index("I loaded the skill `release-app` with skill_view and followed it "
                         "for 1.3:", fresh)
        assert "2. Tag the commit `v1.3` and push the tag." in out[used:]
        assert "skill_manage({" in out and "skill_view({" in out
        assert re.search(r"Skill on disk: devops/release-app \(create by api:\S+\)", out)
        api = re.search(r"API: (http://127\.0\.0\.1:\d+/v1)", text)
        assert api, text[-2000:]
        with urllib.request.urlopen(urllib.request.Request(
                api.group(1) + "/models", headers={"Authorization": "Bearer demo-local-key"}),
                timeout=10) as resp:  # the gateway still answers after the script
            assert resp.status == 200
        dash = re.search(r"Dashboard: (http://127\.0\.0\.1:\d+/) \(open it in a browser\)",
                         text)
        assert dash, text[-2000:]
        with urllib.request.urlopen(dash.group(1), timeout=10) as resp:  # loopback: no login
            assert resp.status == 200
            page = resp.read().decode()
        assert "<h1>Overview</h1>" in page and "api" in page
        stored = re.search(r'id="total-sessions">(\d+)<', page)
        assert stored and int(stored.group(1)) >= 2   # the demo's session and its child
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert not (tmp_path / ".hermes").exists()    # throwaway: the user's home untouched
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_make_demo_passes_args_to_hermes_demo() -> None:
    """`make demo ARGS=--keep` runs `hermes demo --keep` (a dry run: nothing is built)."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("no make on this host")
    root = Path(__file__).resolve().parents[2]
    dry = subprocess.run([make, "-n", "-C", str(root), "-o", ".venv/.installed", "demo",
                          "ARGS=--keep"], capture_output=True, text=True, timeout=30)
    assert dry.returncode == 0, dry.stderr
    assert re.search(r"^\S*hermes demo --keep$", dry.stdout, re.M), dry.stdout
