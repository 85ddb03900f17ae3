"""Full-stack harness: the real GatewayRunner with FakeAdapter and the fake OpenAI server."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from adapters.fake import FakeAdapter
from gateway.config.load import parse_config
from gateway.paths import ProfilePaths, ensure_profile_dirs
from gateway.runner import GatewayRunner
from tests.fakes.openai_server import FakeOpenAIServer


def make_config(model: FakeOpenAIServer, **overrides: Any) -> Any:
    data: dict[str, Any] = {
        "providers": {"main": {"base_url": model.base_url, "api_keys": ["sk-test-key-1"],
                               "model": "fake-model", "context_length": 32000,
                               "timeout_s": 10, "max_retries": 0}},
        "gateway": {"allowed_users": ["u1", "u2"], "drain_timeout_s": 2,
                    "streaming": {"edit_interval_s": 0.05}, "health": {"port": 0}},
        "logging": {"file": {"enabled": False}},
        # The background self-review would add its own requests at the fake model after
        # busy turns; the tests of other features count and script those requests. Its own
        # tests (tests/skills/test_review_e2e.py) turn it on.
        "skills": {"review": {"enabled": False}},
    }
    for dotted, value in overrides.items():
        node = data
        *parents, leaf = dotted.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return parse_config(data, env={})[0]


@asynccontextmanager
async def gateway(home: Path, model: FakeOpenAIServer, *, adapter: FakeAdapter | None = None,
                  health_port: int | None = 0, **overrides: Any):
    paths = ensure_profile_dirs(ProfilePaths(home))
    fake = adapter or FakeAdapter("fake")
    runner = GatewayRunner(make_config(model, **overrides), paths, adapters={"fake": fake},
                           health_port=health_port)
    await runner.start()
    try:
        yield runner, fake
    finally:
        await runner.shutdown()
