"""A held event that a newer message of its conversation overtook is not answered after it.

Found by the chaos suite (seed 9, `--duration 150`, disk full): a turn crashed storing its
message (`turn_crashed`), releasing the message's hold failed too (`turn_release_failed`), so
the message stayed held in state.db while the user, told "something went wrong", wrote on and
was answered. A later boot's start-up recovery (`held_events_requeued`) then queued the old
message again and answered it after the newer ones (14 conversations, up to 55 s late; the
boot in between died before its recovery finished, so it took two restarts).

Now the crashed turn retries the release (inline, so the newer message waits behind it).
Real `GatewayRunner` over one state.db, restarted, with the fake platform and the fake model;
the storage failures are injected at the store (the disk), once each.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from gateway.recovery import HELD_NOTICE
from storage import StateStore
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway.runtime_harness import runner_for
from tests.gateway.test_restart_race import QUEUE, asked, quiet, session_users


async def _crash_storing_first(store: StateStore) -> None:
    """The next store of a turn's messages (`append_and_read` at a turn's start,
    `append_live` otherwise) and the next `inbound_release` fail once, as on a full disk."""
    real_read, real_append = store.append_and_read, store.append_live
    real_release = store.inbound_release
    failing = {"append": 1, "release": 1}

    def failing_once(real: Any, what: str) -> Any:
        async def call(*args: Any, **kw: Any) -> Any:
            if failing[what]:
                failing[what] -= 1
                raise sqlite3.OperationalError("database or disk is full")
            return await real(*args, **kw)

        return call

    store.append_and_read = failing_once(real_read, "append")  # type: ignore[method-assign]
    store.append_live = failing_once(real_append, "append")  # type: ignore[method-assign]
    store.inbound_release = failing_once(real_release, "release")  # type: ignore[method-assign]


@pytest.mark.parametrize("busy_mode", ["queue", "interrupt"])
async def test_a_held_message_overtaken_by_a_newer_one_is_not_answered_after_it(
        tmp_path: Path, model: FakeOpenAIServer, busy_mode: str) -> None:
    home = tmp_path / "home"
    mode = {**QUEUE, "gateway__busy_mode": busy_mode}
    async with runner_for(home, model, **mode) as (runner, fake):
        await _crash_storing_first(runner.store)
        await fake.inject("first", chat_id="c1")
        await fake.wait_for(lambda: any("something went wrong" in t
                                        for t in fake.messages("c1")))
        await fake.inject("second", chat_id="c1")
        await fake.wait_for(lambda: "echo: second" in fake.messages("c1"))
        await quiet(runner, fake)
        assert fake.messages("c1")[-1] == "echo: second"

    async with runner_for(home, model, **mode) as (runner, fake):
        await quiet(runner, fake)
        shown = fake.messages("c1")
        assert "echo: first" not in shown, shown  # answered after "second": out of order
        assert HELD_NOTICE not in shown
        assert await session_users(runner, "c1") == ["second"]
        assert asked(model, "first") == 0
        assert await runner.store.inbound_held_count() == 0

        await fake.inject("third", chat_id="c1")  # the conversation goes on
        await fake.wait_for(lambda: "echo: third" in fake.messages("c1"))
        assert await session_users(runner, "c1") == ["second", "third"]
