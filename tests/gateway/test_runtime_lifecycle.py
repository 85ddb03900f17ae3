"""The runner's lifecycle: an async context manager whose teardown undoes exactly what
start-up did, in reverse, also when start-up fails half-way."""

from __future__ import annotations

import socket

import pytest

from adapters.fake import FakeAdapter
from gateway.paths import ProfilePaths, ensure_profile_dirs
from gateway.runner import ConfigurationError, GatewayRunner
from storage import StoreClosedError
from tests.fakes.openai_server import FakeOpenAIServer, text
from tests.integration.harness import make_config


@pytest.fixture
async def model():
    async with FakeOpenAIServer() as server:
        yield server


async def test_async_with_serves_then_tears_everything_down(tmp_path, model):
    model.enqueue(text("hello from the model"))
    paths = ensure_profile_dirs(ProfilePaths(tmp_path))
    fake = FakeAdapter("fake")
    runner = GatewayRunner(make_config(model), paths, adapters={"fake": fake}, health_port=0)
    async with runner:
        await fake.inject("hi", chat_id="c1", user_id="u1")
        await fake.wait_for_messages("c1", 1)
        store = runner.store
        assert runner.health is not None and runner.health.port
    assert fake.messages("c1") == ["hello from the model"]
    assert fake.stops == 1  # the adapter was stopped
    with pytest.raises(StoreClosedError):  # storage closed after the adapters stopped
        await store.set_cursor("after", "teardown")
    # The profile lock was released: the next gateway on this profile starts at once.
    async with GatewayRunner(make_config(model), paths, adapters={"fake": FakeAdapter("fake")},
                             health_port=0) as again:
        assert again.adapters


async def test_a_start_that_fails_half_way_undoes_what_it_did(tmp_path, model):
    paths = ensure_profile_dirs(ProfilePaths(tmp_path))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        fake = FakeAdapter("fake")
        runner = GatewayRunner(make_config(model), paths, adapters={"fake": fake},
                               health_port=port)
        with pytest.raises(ConfigurationError, match="cannot listen"):
            await runner.start()
        store = runner.store
        await runner.shutdown()
    assert fake.starts == 1 and fake.stops == 1
    with pytest.raises(StoreClosedError):
        await store.set_cursor("after", "teardown")
    await runner.shutdown()  # a second shutdown is a no-op
    async with GatewayRunner(make_config(model), paths, adapters={"fake": FakeAdapter("fake")},
                             health_port=0) as again:
        assert again.adapters
