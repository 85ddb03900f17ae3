"""The single-writer rule in both states: with `hermes gateway run` serving the profile,
`hermes chat` talks to it (one process writes state.db); with none running, `hermes chat`
runs its own gateway, which holds the profile so `hermes gateway run` refuses meanwhile; and
a gateway that does not serve the terminal chat makes `hermes chat` refuse (exit 78)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pexpect
import pytest
import yaml

from tests.chat.conftest import HERMES, chat_env, hermes, stored_texts, write_profile
from tests.fakes.gateway_process import gateway_process, until
from tests.fakes.openai_server import FakeOpenAIServer, Reply

pytestmark = pytest.mark.timeout(120)


async def test_chat_goes_through_the_running_gateway(tmp_path: Path,
                                                     model: FakeOpenAIServer) -> None:
    prof = write_profile(tmp_path, model.base_url)
    sock = prof / "run" / "cli.sock"
    async with gateway_process(prof) as proc:
        await until(sock.exists, "the cli socket", log=prof / "stderr.log")
        model.enqueue(Reply(text="Hello from the daemon."))
        r = await asyncio.to_thread(hermes, tmp_path, "chat", "-q", "hi daemon", "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["reply"] == "Hello from the daemon."
        assert proc.returncode is None                 # the daemon kept running, unharmed
        # the daemon wrote the turn (the chat process never opened the store)
        assert ("cli", "user", "hi daemon") in stored_texts(prof)


async def test_a_gateway_without_the_cli_adapter_is_never_bypassed(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    prof = write_profile(tmp_path, model.base_url, api_key="k-0123456789abcdef")
    data = yaml.safe_load((prof / "config.yaml").read_text())
    del data["platforms"]["cli"]
    (prof / "config.yaml").write_text(yaml.safe_dump(data))
    async with gateway_process(prof):
        await until(lambda: (prof / "run" / "gateway.pid").exists(), "the gateway",
                    log=prof / "stderr.log")
        await asyncio.sleep(0.5)
        r = await asyncio.to_thread(hermes, tmp_path, "chat", "-q", "hello")
    assert r.returncode == 78
    assert "platforms.cli.enabled" in r.stderr
    assert model.requests == []


async def test_chat_holds_the_profile_while_it_runs_its_own_gateway(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    write_profile(tmp_path, model.base_url)
    child = pexpect.spawn(str(HERMES), ["chat"], env=chat_env(tmp_path), encoding="utf-8",
                          dimensions=(40, 100), timeout=30)
    try:
        await asyncio.to_thread(child.expect, "you ›")
        run = await asyncio.to_thread(hermes, tmp_path, "gateway", "run")
        assert run.returncode == 78 and "already running" in run.stderr.lower()
        # a second terminal joins the same gateway instead of opening the store itself
        model.enqueue(Reply(text="Second terminal here."))
        second = await asyncio.to_thread(hermes, tmp_path, "chat", "-q", "from another tty")
        assert second.returncode == 0 and "Second terminal here." in second.stdout
        child.sendintr()                                   # Ctrl-C at the prompt: a hint
        await asyncio.to_thread(child.expect, "Ctrl-C again")
        child.sendintr()                                   # and again: leave
        await asyncio.to_thread(child.expect, pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
