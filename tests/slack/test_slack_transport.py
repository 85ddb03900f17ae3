"""Socket Mode reconnects, HTTP Events API verification, start-up auth failures."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from adapters.slack.adapter import SlackAdapter
from gateway.ports import AdapterAuthError, AdapterError
from tests.slack.conftest import Recorder, Running, adapter_settings
from tests.slack.fake_slack import FakeSlack
from tests.slack.payloads import event_callback, message_event


async def _eventually(pred, timeout_s: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.02)


async def test_disconnect_message_reconnects_and_keeps_receiving(running: Running) -> None:
    fake = running.fake
    assert fake.connections_opened == 1
    await fake.disconnect("refresh_requested")
    await _eventually(lambda: fake.connections_opened == 2 and len(fake.live_sockets()) == 1)
    await fake.user_message("after refresh")
    [ev] = await running.rec.wait_emitted(1)
    assert ev.text == "after refresh"


async def test_dropped_socket_reconnects_and_keeps_receiving(running: Running) -> None:
    fake = running.fake
    await fake.drop()
    await _eventually(lambda: fake.connections_opened >= 2 and len(fake.live_sockets()) >= 1)
    before = running.rec.progress_count
    await fake.user_message("after drop")
    [ev] = await running.rec.wait_emitted(1)
    assert ev.text == "after drop"
    await _eventually(lambda: running.rec.progress_count > before)
    assert running.task is not None and not running.task.done()


async def test_socket_reports_progress_while_idle(running: Running) -> None:
    start = running.rec.progress_count
    await _eventually(lambda: running.rec.progress_count >= start + 2)


async def test_stop_returns_from_start(running: Running) -> None:
    await running.adapter.stop()
    assert running.task is not None
    await asyncio.wait_for(running.task, 5)
    await running.adapter.stop()  # idempotent


async def test_invalid_bot_token_is_fatal(fake: FakeSlack, tmp_path: Path) -> None:
    adapter = SlackAdapter("slack", adapter_settings(fake, bot_token="xoxb-wrong"))
    with pytest.raises(AdapterAuthError) as info:
        await adapter.start(Recorder(tmp_path).context())
    assert "xoxb-wrong" not in str(info.value)


async def test_inactive_account_is_fatal(fake: FakeSlack, tmp_path: Path) -> None:
    fake.fail_next("auth.test", "account_inactive")
    with pytest.raises(AdapterAuthError):
        await SlackAdapter("slack", adapter_settings(fake)).start(Recorder(tmp_path).context())


async def test_invalid_app_token_is_fatal(fake: FakeSlack, tmp_path: Path) -> None:
    adapter = SlackAdapter("slack", adapter_settings(fake, app_token="xapp-wrong"))
    with pytest.raises(AdapterAuthError):
        await adapter.start(Recorder(tmp_path).context())


async def test_unreachable_api_is_a_transport_error(tmp_path: Path) -> None:
    adapter = SlackAdapter("slack", {"bot_token": "x", "app_token": "y", "timeout_s": 2,
                                     "api_base_url": "http://127.0.0.1:9/api/"})
    with pytest.raises(AdapterError) as info:
        await adapter.start(Recorder(tmp_path).context())
    assert not isinstance(info.value, AdapterAuthError)


async def test_start_can_be_called_again_after_stop(fake: FakeSlack, tmp_path: Path) -> None:
    adapter = SlackAdapter("slack", adapter_settings(fake))
    for round_ in range(2):
        run = Running(fake, adapter, Recorder(tmp_path))
        await run.start()
        await fake.user_message(f"round {round_}")
        [ev] = await run.rec.wait_emitted(1)
        assert ev.text == f"round {round_}"
        await run.close()


# -- HTTP Events API --------------------------------------------------------------------------


async def test_http_url_verification_is_answered(running_http: Running) -> None:
    status, body = await running_http.fake.url_verification("chal-123")
    assert status == 200 and "chal-123" in body


async def test_http_bad_signature_is_refused_and_nothing_emitted(running_http: Running) -> None:
    fake = running_http.fake
    payload = event_callback(
        message_event(channel="D0001", ts=fake.next_ts(), text="forged", user="U0001",
                      channel_type="im"),
        team_id=fake.team_id, api_app_id=fake.app_id, bot_user_id=fake.bot_user_id)
    status, _ = await fake.post_event(payload, secret="not-the-secret")
    assert status == 401
    stale, _ = await fake.post_event(payload, timestamp=int(time.time()) - 600)
    assert stale == 401
    await asyncio.sleep(0.1)
    assert running_http.rec.emitted == [] and running_http.rec.emit_calls == 0


async def test_http_event_and_redelivery_make_one_event(running_http: Running) -> None:
    fake = running_http.fake
    await fake.user_message("over http", channel="C0001", mention=True)
    [ev] = await running_http.rec.wait_emitted(1)
    assert ev.mentions_bot and ev.text == "over http"
    status, _ = await fake.post_event(fake.last_delivered, retry_num=1)  # type: ignore[arg-type]
    assert status == 200
    await fake.redeliver_last()
    await asyncio.sleep(0.1)
    assert len(running_http.rec.emitted) == 1
    assert running_http.adapter.capabilities.liveness_window_s == 0


async def test_http_mode_sends_replies_too(running_http: Running) -> None:
    from gateway.events import OutboundMessage

    res = await running_http.adapter.send(OutboundMessage(chat_id="D0001", text="pong"))
    assert res.ok and running_http.fake.bot_messages("D0001")[0].text == "pong"


async def test_app_token_revoked_while_running_fails_then_is_fatal(
        fake: FakeSlack, tmp_path: Path) -> None:
    adapter = SlackAdapter("slack", adapter_settings(fake, give_up_s=1.0))
    run = Running(fake, adapter, Recorder(tmp_path))
    await run.start()
    fake.app_token = "xapp-rotated"  # the old token is refused from now on
    await fake.drop()
    assert run.task is not None
    with pytest.raises(AdapterError) as info:
        await asyncio.wait_for(run.task, 10)
    assert not isinstance(info.value, AdapterAuthError)  # a transport failure: restart
    with pytest.raises(AdapterAuthError):  # the supervisor's restart then finds the cause
        await adapter.start(Recorder(tmp_path).context())
