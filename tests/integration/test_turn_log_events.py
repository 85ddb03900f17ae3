"""The log events of a full turn, captured with structlog's `LogCapture`.

A turn leaves one line at info, `turn_finished` (ids, outcome, duration, tokens), and at
debug a trail an operator can follow by its ids: the message was routed (`inbound_routed`),
the turn started (`turn_started`), the reply went out (`final_delivered`). (Every info line
costs the hot path: four per turn cost about 1 ms of CPU per event in bench_gateway.) The capture sits where the renderers sit in the real pipeline
(`gateway.logging.configure_logging`): the context fields bound by `bind_context` and the
redaction processor have run on every captured event.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import LogCapture

from gateway.logging import configure_logging, reset_logging
from hermes_common.redact import clear_registered_secrets, register_secret
from tests.fakes.openai_server import FakeOpenAIServer, error, text
from tests.integration.harness import gateway

TRAIL = ("inbound_routed", "turn_started", "final_delivered", "turn_finished")
SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
PROVIDER_KEY = "sk-test-key-1"  # the harness's configured provider key
PROBE = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX123456"


@pytest.fixture
def events() -> Iterator[list[dict[str, Any]]]:
    """Every structlog event, after the real pipeline's context and redaction processors."""
    saved = structlog.get_config()
    configure_logging(level="DEBUG", fmt="json", stream=io.StringIO())
    register_secret(PROVIDER_KEY)  # what the config loader does for configured secrets
    processors = structlog.get_config()["processors"]
    assert processors[-1] is structlog.stdlib.ProcessorFormatter.wrap_for_formatter
    capture = LogCapture()
    structlog.configure(processors=[*processors[:-1], capture])
    try:
        yield capture.entries
    finally:
        reset_logging()
        structlog.configure(**saved)
        clear_registered_secrets()


@pytest.fixture
async def model() -> Any:
    async with FakeOpenAIServer() as server:
        yield server


def _trail(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] in TRAIL]


async def test_a_turn_leaves_a_trail_of_events_with_ids_timings_and_tokens(
    tmp_path: Path, model: FakeOpenAIServer, events: list[dict[str, Any]]
) -> None:
    model.enqueue(text("Hello there, friend!", chunk_chars=3, delay_s=0.01))
    async with gateway(tmp_path, model) as (runner, fake):
        # Adapter-supplied ids are logged as they come: a secret riding on one is redacted.
        await fake.inject("hi bot", chat_id="c1", user_id="u1", event_id=f"evt-{PROBE}")
        await fake.wait_for_messages("c1", 1)
        await fake.wait_turns(1)
        session = await runner.store.find_by_session_key("fake:dm:c1")
        outbox = await runner.store.outbox_latest_for_session(session.id)
    assert fake.messages("c1") == ["Hello there, friend!"]

    routed, started, delivered, finished = trail = _trail(events)
    assert [e["event"] for e in trail] == list(TRAIL)
    assert [e["log_level"] for e in trail] == ["debug", "debug", "debug", "info"]
    ids = {"platform": "fake", "session_key": "fake:dm:c1"}
    assert routed.items() >= {**ids, "event_id": "evt-[REDACTED]",
                              "logger": "gateway.inbound"}.items()
    assert started.items() >= {**ids, "session_id": session.id, "events": 1}.items()
    assert delivered.items() >= {**ids, "session_id": session.id, "adapter": "fake",
                                 "outbox_id": outbox.id, "parts": 1, "attachments": 0,
                                 "retries": 0}.items()
    assert finished.items() >= {**ids, "session_id": session.id, "outcome": "ok",
                                "model_calls": 1}.items()
    assert 0 < finished["duration_s"] < 10
    assert finished["input_tokens"] > 0 and finished["output_tokens"] > 0

    # Every event of the run (start-up and shutdown included) is a snake_case name, and no
    # secret reached any of them.
    assert [e["event"] for e in events if not SNAKE.match(e["event"])] == []
    seen = repr(events)
    assert PROBE not in seen and PROVIDER_KEY not in seen


async def test_a_failed_model_call_ends_the_trail_with_outcome_error(
    tmp_path: Path, model: FakeOpenAIServer, events: list[dict[str, Any]]
) -> None:
    model.enqueue(error(400, f"Incorrect API key provided: {PROVIDER_KEY}"))
    async with gateway(tmp_path, model) as (runner, fake):
        await fake.inject("hi bot", chat_id="c1", user_id="u1")
        await fake.wait_turns(1)
        session = await runner.store.find_by_session_key("fake:dm:c1")
    assert fake.messages("c1")[0].startswith("⚠️ The model request failed")

    trail = _trail(events)
    assert [e["event"] for e in trail] == list(TRAIL)  # the error notice is the final
    finished = trail[-1]
    assert finished.items() >= {"session_id": session.id, "outcome": "error",
                                "model_calls": 0}.items()
    assert PROVIDER_KEY not in repr(events)
