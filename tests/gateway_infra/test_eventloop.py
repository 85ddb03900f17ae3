"""Which loop the daemon (and this suite) runs on: `gateway.eventloop`."""

from __future__ import annotations

import asyncio
import os

import pytest
import uvloop

from gateway.eventloop import loop_factory, loop_name, run


def test_auto_and_uvloop_pick_uvloop_and_asyncio_picks_the_standard_loop() -> None:
    assert loop_factory({}) is uvloop.new_event_loop
    assert loop_factory({"HERMES_EVENT_LOOP": " UVLOOP "}) is uvloop.new_event_loop
    assert loop_factory({"HERMES_EVENT_LOOP": "asyncio"}) is asyncio.new_event_loop


def test_an_unknown_choice_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="auto, uvloop or asyncio, not 'tokio'"):
        loop_factory({"HERMES_EVENT_LOOP": "tokio"})


def test_run_runs_the_coroutine_on_the_chosen_loop(monkeypatch) -> None:
    async def which() -> str:
        return loop_name(asyncio.get_running_loop())

    monkeypatch.delenv("HERMES_EVENT_LOOP", raising=False)
    assert run(which()) == "uvloop"
    monkeypatch.setenv("HERMES_EVENT_LOOP", "asyncio")
    assert run(which()) == "asyncio"


async def test_this_suite_runs_on_the_daemons_loop() -> None:
    want = "asyncio" if os.environ.get("HERMES_EVENT_LOOP") == "asyncio" else "uvloop"
    assert loop_name(asyncio.get_running_loop()) == want
