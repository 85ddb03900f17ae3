"""Dashboard tests: the real gateway in-process (api + fake adapters, dashboard on a free
port, the fake OpenAI model) and Debian's headless Chromium driven by Playwright."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.fake import FakeAdapter
from gateway.registry import adapter_spec
from gateway.runner import GatewayRunner
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway.runtime_harness import runner_for

API_KEY = "k-dashboard-test-0123456789"
TOKEN = "dash-token-abcdefghijklmnop"
CHROMIUM = os.environ.get("HERMES_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-dev-shm-usage"]
SHOTS = os.environ.get("HERMES_DASHBOARD_SHOTS")  # a folder: save a screenshot of each page


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
async def gateway(tmp_path: Path, model: FakeOpenAIServer,
                  ) -> AsyncIterator[tuple[GatewayRunner, FakeAdapter]]:
    api = adapter_spec("api").create("api", {"enabled": True, "host": "127.0.0.1", "port": 0,
                                             "api_keys": [API_KEY]})
    fake = FakeAdapter("fake")
    overrides: dict[str, Any] = {"dashboard__enabled": True, "dashboard__token": TOKEN,
                                 "compression__protect_first_n": 1}
    async with runner_for(tmp_path, model, adapters={"fake": fake, "api": api},
                          **overrides) as (runner, _):
        yield runner, fake


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    if not Path(CHROMIUM).exists():
        reason = f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(reason)  # CI installs it: a missing browser is a failure there
        pytest.skip(reason)
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        b = await pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        try:
            yield b
        finally:
            await b.close()
