"""A started gateway loads only what its enabled parts need (issue 21, deliverable 4): the model
SDK comes with the first model call, the page extractor with the first page, Pillow with the
first image, platform SDKs with their adapters, and neither rich (structlog would pull it in
for tracebacks we render plainly) nor the markdown-it fallback of pyromark at all (the threat rules compile in a thread once the gateway is ready). The
`openai` SDK alone is about 25 MB and most of a second on a small host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

LATE = ("openai", "trafilatura", "lxml", "telegram", "slack_bolt",
        "discord", "mcp", "jinja2", "prompt_toolkit",
        # structlog's rich tracebacks (rich, pygments) and greenlet thread-locals, the
        # markdown-it fallback, Pillow
        "rich", "pygments", "greenlet", "markdown_it", "PIL")
#: Modules of ours a gateway on SQLite with `tools.terminal` off never needs: the replicas
#: runtime (`storage.backend: postgres`) and the terminal tool with its dangerous-command rules.
OFF = ("gateway.replicas", "agent_core.tools.builtin.terminal",
       "agent_core.tools.builtin.dangerous")

PROBE = """
import asyncio, json, sys
from pathlib import Path
from tests.fakes.openai_server import FakeOpenAIServer, text
from tests.gateway.runtime_harness import runner_for

LATE, OFF = %r

def loaded():
    return sorted({m.split(".")[0] for m in sys.modules} & set(LATE))

def ours_off():
    return sorted(m for m in sys.modules if m.startswith(OFF))

async def main():
    async with FakeOpenAIServer() as model:
        async with runner_for(Path(sys.argv[1]), model) as (runner, fake):
            ready = loaded()
            model.enqueue(text("Hello there."))
            await fake.inject("hi")
            await fake.wait_turns(1, timeout_s=60)
            after_turn = loaded()
            for _ in range(600):  # the threat rules compile in a thread once ready
                kept = sorted(p.name for p in runner.paths.cache.glob("fold-table-*.json"))
                if kept:
                    break
                await asyncio.sleep(0.05)
            print(json.dumps({"ready": ready, "after_turn": after_turn, "off": ours_off(),
                              "chat": fake.messages("c1"), "kept": kept}))

asyncio.run(main())
"""


def test_the_model_sdk_loads_with_the_first_turn(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", PROBE % ((LATE, OFF),), str(tmp_path)], cwd=root,
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["ready"] == [], f"a started gateway imported {got['ready']}"
    assert got["chat"] == ["Hello there."]
    assert got["after_turn"] == ["openai"]  # the turn needed the SDK, and nothing else
    assert got["off"] == [], f"a SQLite gateway with the terminal off imported {got['off']}"
    # the confusables table of the threat scan is kept for the next start (a few ms to read
    # against ~0.1 s of CPU and ~3 MB to build)
    assert len(got["kept"]) == 1


def test_pydantic_skips_its_plugin_scan_unless_the_deployment_asks_for_plugins() -> None:
    """The scan reads the entry points of every installed distribution at the first model
    built (start-up time); a deployment with a pydantic plugin keeps it by setting the
    variable itself."""
    root = Path(__file__).resolve().parents[2]
    probe = ("import os, gateway.config.models; "
             "print(repr(os.environ.get('PYDANTIC_DISABLE_PLUGINS')))")
    base = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    for given, expected in ((None, "'__all__'"), ("", "''")):
        env = {**base, "PYTHONPATH": str(root)}
        if given is not None:
            env["PYDANTIC_DISABLE_PLUGINS"] = given
        out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True,
                             text=True, timeout=60, env=env)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.split()[0] == expected
