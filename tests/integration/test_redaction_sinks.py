"""Every secret shape the redaction knows is hidden at every sink: a log line, `hermes config
show`, an error text that reaches a chat through the FakeAdapter, and the summarizer's input.

Registered values are registered the way the process does it: the config loader registers the
configured secrets, configuring logging registers the secret-named environment variables.
"""

from __future__ import annotations

import io
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from agent_core.compression import CompressionSettings, ContextCompressor
from gateway.logging import configure_logging, get_logger, reset_logging
from hermes_common.redact import clear_registered_secrets, register_environment, register_secret
from tests.common.secret_shapes import ENV_NAME, ENV_VALUE, REGISTERED, SHAPES
from tests.compression.compression_support import FIXED_NOW, FakeSummarizer, conversation
from tests.config.conftest import run_hermes
from tests.fakes.openai_server import FakeOpenAIServer, error
from tests.integration.harness import gateway

PROVIDER_KEY = "odd-provider-credential-99"
SECRETS = [s.secret for s in SHAPES] + [REGISTERED, ENV_VALUE, PROVIDER_KEY]


@pytest.fixture(autouse=True)
def _clean_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(ENV_NAME, ENV_VALUE)
    clear_registered_secrets()
    yield
    clear_registered_secrets()


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def test_log_lines(tmp_path: Path) -> None:
    register_secret(REGISTERED)  # what load_config does for configured secrets
    buf = io.StringIO()
    configure_logging(fmt="json", stream=buf, log_dir=tmp_path / "logs")
    try:
        log = get_logger("sinks")
        for shape in (*SHAPES,):
            log.warning("shape_seen", shape=shape.name, detail=shape.text)
            logging.getLogger("some.library").warning("library said %s", shape.text)
        log.info("odd_values", detail=f"{REGISTERED} and {ENV_VALUE}")
        try:
            raise RuntimeError("\n".join(s.text for s in SHAPES))
        except RuntimeError:
            log.exception("crashed")
    finally:
        reset_logging()
    stream = buf.getvalue()
    file = (tmp_path / "logs" / "gateway.log").read_text(encoding="utf-8")
    for text in (stream, file):
        assert _leaks(text) == []
        records = [json.loads(line) for line in text.splitlines()]
        assert len(records) == 2 * len(SHAPES) + 2
        assert all("[REDACTED]" in r["detail"] for r in records if r["event"] == "shape_seen")


def test_config_show(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = home / ".hermes"
    root.mkdir(mode=0o700, parents=True)
    shapes = "\n".join(s.text for s in SHAPES) + f"\nproxy {REGISTERED} end"
    config = {
        "providers": {"main": {"api_keys": ["${MAIN_KEY}"], "model": shapes}},
        "auxiliary": {"model": f"${{{ENV_NAME}}}"},  # a non-secret key refers to it
        "platforms": {"discord": {"enabled": True, "token": REGISTERED}},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    # Only `.env` holds the variable (run_hermes passes no HERMES_* variable on).
    (root / ".env").write_text(f"MAIN_KEY={PROVIDER_KEY}\n{ENV_NAME}={ENV_VALUE}\n")
    os.chmod(root / ".env", 0o600)
    for args in (("config", "show"), ("config", "show", "--json")):
        r = run_hermes(home, *args)
        assert r.returncode == 0, r.stderr
        assert _leaks(r.stdout + r.stderr) == []
    shown = yaml.safe_load(run_hermes(home, "config", "show").stdout)
    model = shown["providers"]["main"]["model"]
    assert model.count("[REDACTED]") >= len(SHAPES) and model.endswith("proxy [REDACTED] end")
    assert shown["auxiliary"]["model"] == "[REDACTED]"


async def test_error_texts_in_a_chat(tmp_path: Path) -> None:
    register_secret(REGISTERED)  # what load_config does
    register_environment(os.environ)  # what configuring logging does
    odd = [REGISTERED, ENV_VALUE, PROVIDER_KEY]
    texts = [s.text for s in SHAPES] + [f"upstream echoed {v} back" for v in odd]
    async with FakeOpenAIServer() as model:
        model.enqueue(*(error(400, t) for t in texts))
        async with gateway(tmp_path, model, providers__main__api_keys=[PROVIDER_KEY]) as (
            _runner, fake,
        ):
            for i in range(len(texts)):
                await fake.inject(f"question {i}", chat_id="c1", user_id="u1")
                await fake.wait_turns(i + 1, timeout_s=20)
            shown = fake.messages("c1")
    assert len(shown) == len(texts)
    assert all(m.startswith("⚠️ The model request failed") for m in shown), shown
    assert all("[REDACTED]" in m for m in shown)
    assert _leaks("\n".join(shown)) == []


async def test_summarizer_input() -> None:
    register_secret(REGISTERED)
    register_environment(os.environ)
    texts = [s.text for s in SHAPES] + [REGISTERED, ENV_VALUE]
    msgs = conversation(len(texts) + 20, 1500)
    for i, secret_text in enumerate(texts):
        user = 1 + 4 * (i + 1)  # the user message of turn i + 1
        msgs[user] = {"role": "user", "content": f"step {i + 1} note: {secret_text}"}
    summ = FakeSummarizer()
    engine = ContextCompressor(summ, context_length=32_000, settings=CompressionSettings(),
                               clock=lambda: FIXED_NOW)
    await engine.compress(msgs)
    sent = json.dumps(summ.requests, ensure_ascii=False)
    missing = [i + 1 for i in range(len(texts)) if f"step {i + 1} note:" not in sent]
    assert missing == [], "these notes never reached the summarizer"
    assert _leaks(sent) == []
