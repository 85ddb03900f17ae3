"""`hermes chat` tests: a throwaway profile whose model is the fake OpenAI server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from tests.fakes.openai_server import FakeOpenAIServer

HERMES = Path(sys.executable).with_name("hermes")


def write_profile(home: Path, model_url: str, *, api_key: str | None = None) -> Path:
    """`<home>/.hermes` with the fake model, the cli adapter and (optionally) the api one."""
    prof = home / ".hermes"
    prof.mkdir(parents=True, exist_ok=True)
    platforms: dict[str, object] = {"cli": {"enabled": True}}
    if api_key:
        platforms["api"] = {"enabled": True, "host": "127.0.0.1", "port": 0,
                            "api_keys": [api_key]}
    (prof / "config.yaml").write_text(yaml.safe_dump({
        "providers": {"main": {"base_url": model_url, "api_keys": ["sk-test"],
                               "model": "fake-model", "max_retries": 0}},
        "gateway": {"health": {"port": 0}, "drain_timeout_s": 2,
                    "streaming": {"edit_interval_s": 0.1}},
        "platforms": platforms,
    }))
    return prof


def chat_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(HOME=str(home), TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", NO_COLOR="1",
               COLUMNS="100", LINES="40", PYTHONDONTWRITEBYTECODE="1")
    return env


def hermes(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HERMES), *args], env=chat_env(home), capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def stored_texts(prof: Path) -> list[tuple[str, str, str]]:
    """(session source, role, content) of every stored message, read-only (a running
    gateway may hold the store: SQLite's WAL lets this read beside it)."""
    import sqlite3

    con = sqlite3.connect(f"file:{prof / 'state.db'}?mode=ro", uri=True)
    try:
        return [(str(a), str(b), str(c)) for a, b, c in con.execute(
            "SELECT s.source, m.role, COALESCE(m.content, '') FROM messages m "
            "JOIN sessions s ON s.id = m.session_id ORDER BY m.id")]
    finally:
        con.close()


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server
