"""Who reaches the dashboard: a token is required beyond loopback (exit 78, like
`gateway.health.token`); without one, only requests addressed to a loopback host are served
(no DNS rebinding), and the forms still need the CSRF token."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from gateway.config.load import parse_config
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway.runtime_harness import runner_for

HERMES = Path(sys.executable).with_name("hermes")


def test_a_token_is_required_beyond_loopback(tmp_path: Path) -> None:
    prof = tmp_path / ".hermes"
    prof.mkdir()
    (prof / "config.yaml").write_text(
        "dashboard: {enabled: true, host: 0.0.0.0}\n"
        "platforms:\n  api: {enabled: true, port: 0, api_keys: [k-0123456789abcdef]}\n")
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for args in (("config", "check"), ("gateway", "run")):
        r = subprocess.run([str(HERMES), *args], env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 78, r.stderr
        assert "dashboard.token" in r.stderr and "loopback" in r.stderr
    cfg, _, _ = parse_config({"dashboard": {"enabled": True, "host": "0.0.0.0",
                                            "token": "a-long-dashboard-token"}}, env={})
    assert cfg.problems() == []
    assert "a-long-dashboard-token" in cfg.secret_values()  # redacted like any secret


@pytest.mark.timeout(60)
async def test_without_a_token_only_loopback_hosts_and_csrf_forms(tmp_path: Path) -> None:
    async with FakeOpenAIServer() as model, \
            runner_for(tmp_path, model, dashboard__enabled=True) as (runner, _fake):
        assert runner.dashboard is not None
        base = runner.dashboard.url.rstrip("/")
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            r = await http.get(base + "/")
            assert r.status == 200 and "Overview" in await r.text()
            r = await http.get(base + "/", headers={"Host": "evil.example:8766"})
            assert r.status == 421
            page = await (await http.get(base + "/pairing")).text()
            assert (await http.post(base + "/pairing/approve",
                                    data={"platform": "fake", "code": "X"})).status == 403
            csrf = re.search(r'name="csrf" value="([^"]+)"', page)
            assert csrf is not None
            r = await http.post(base + "/pairing/approve", data={
                "platform": "fake", "code": "NOPE", "csrf": csrf.group(1)})
            assert r.status == 400 and "No pending code" in await r.text()
