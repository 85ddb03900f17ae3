"""Issue 15's restart case, end to end with the real `hermes gateway run` and Telegram long
polling: a message sent while the gateway was down is answered exactly once after a SIGTERM
restart, and stored once, also when its chat is the oldest of dozens of sessions (walked
last by start-up recovery) and the live answer takes a while. `benchmarks/restart_race.py`
runs the same case N times."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.telegram.restart_case import run_restart_case

pytestmark = pytest.mark.timeout(150)


async def test_a_message_sent_while_down_is_answered_once_after_a_sigterm_restart(
        tmp_path: Path) -> None:
    outcome = await run_restart_case(tmp_path, sessions=36)
    assert outcome.ok, outcome.describe() + "\n" + outcome.log_tail
