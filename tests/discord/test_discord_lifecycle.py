"""Connection lifecycle: RESUME after a drop, auth errors, stop/restart, endpoint override."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route
from pydantic import ValidationError

from adapters.discord import SPEC, DiscordSettings
from adapters.discord.backfill import CURSOR_NAME, SeenChannels
from adapters.discord.endpoints import apply_endpoints
from gateway.events import OutboundMessage
from gateway.ports import AdapterAuthError
from gateway.supervision_types import MemoryCursorStore as MemoryCursors
from tests.adapters_contract.harness_discord import DiscordHarness
from tests.discord.fake_payloads import DM_ALICE, GENERAL, THREAD

ORIGINAL_BASE = Route.BASE
ORIGINAL_GATEWAY = DiscordWebSocket.DEFAULT_GATEWAY


async def test_missed_message_arrives_once_through_resume(discord_h: DiscordHarness) -> None:
    fake = discord_h.fake
    await fake.user_says("before", channel=DM_ALICE)
    await discord_h.wait_emitted(1)
    session = fake.gateway.session
    assert session is not None

    await fake.drop_connection(hold=True)  # the reconnect waits until release()
    await fake.user_says("while away", channel=GENERAL, mention_bot=True)
    fake.release()
    await asyncio.wait_for(fake.gateway.attached.wait(), 10)
    await fake.user_says("after", channel=DM_ALICE)

    events = await discord_h.wait_emitted(3)
    assert [e.text for e in events] == ["before", "while away", "after"]
    assert discord_h.emit_calls == 3  # nothing emitted twice
    assert len(fake.gateway.identifies) == 1  # resumed, not re-identified
    [resume] = fake.gateway.resumes
    assert resume["session_id"] == session.session_id
    assert fake.gateway.paths == ["/gateway", "/resume"]  # READY's resume_gateway_url used


async def test_outbound_keeps_working_after_a_drop(discord_h: DiscordHarness) -> None:
    await discord_h.fake.drop_connection()
    await asyncio.wait_for(discord_h.fake.gateway.attached.wait(), 10)
    res = await discord_h.adapter.send(OutboundMessage(chat_id=str(DM_ALICE), text="still here"))
    assert res.ok
    await discord_h.fake.user_says("ping", channel=DM_ALICE)
    [ev] = await discord_h.wait_emitted(1)
    assert ev.text == "ping"


async def test_refused_token_is_an_auth_error(tmp_path: Path) -> None:
    async with DiscordHarness(tmp_path) as h:
        h.adapter = SPEC.create("discord", h.fake.settings(token="wrong-token"))
        with pytest.raises(AdapterAuthError) as info:
            await h.start()
        assert "wrong-token" not in str(info.value)
        assert h.fake.gateway.identifies == []  # stopped at GET /users/@me
    assert Route.BASE == ORIGINAL_BASE


async def test_missing_token_is_an_auth_error(tmp_path: Path) -> None:
    adapter = SPEC.create("discord", {"api_base_url": "http://127.0.0.1:9/api/v10"})
    async with DiscordHarness(tmp_path) as h:
        with pytest.raises(AdapterAuthError):
            await adapter.start(h.context())


async def test_stop_then_start_again_uses_a_fresh_client(tmp_path: Path) -> None:
    async with DiscordHarness(tmp_path) as h:
        await h.start()
        assert Route.BASE == h.fake.api_base_url
        assert DiscordWebSocket.DEFAULT_GATEWAY == yarl.URL(h.fake.gateway_url)
        first_task = h._task
        await h.adapter.stop()
        await h.adapter.stop()  # idempotent
        assert first_task is not None
        await asyncio.wait_for(first_task, 10)
        assert Route.BASE == ORIGINAL_BASE
        assert DiscordWebSocket.DEFAULT_GATEWAY == ORIGINAL_GATEWAY

        h._connected.clear()
        await h.start()  # the supervisor restarts the same adapter object
        await h.fake.user_says("second life", channel=DM_ALICE)
        [ev] = await h.wait_emitted(1)
        assert ev.text == "second life"
        assert len(h.fake.gateway.identifies) == 2


async def test_stop_event_ends_start(tmp_path: Path) -> None:
    async with DiscordHarness(tmp_path) as h:
        await h.start()
        h.context().stop_event.set()
        assert h._task is not None
        await asyncio.wait_for(h._task, 10)
        res = await h.adapter.send(OutboundMessage(chat_id=str(DM_ALICE), text="late"))
        assert not res.ok  # no client any more: a clean failure, not an exception


def test_apply_endpoints_sets_and_restores() -> None:
    restore = apply_endpoints("http://127.0.0.1:1234/api/v10/", "ws://127.0.0.1:1234/gateway")
    try:
        assert Route.BASE == "http://127.0.0.1:1234/api/v10"
        assert Route("GET", "/users/@me").url == "http://127.0.0.1:1234/api/v10/users/@me"
        assert DiscordWebSocket.DEFAULT_GATEWAY == yarl.URL("ws://127.0.0.1:1234/gateway")
    finally:
        restore()
    restore()  # idempotent
    assert Route.BASE == ORIGINAL_BASE
    assert DiscordWebSocket.DEFAULT_GATEWAY == ORIGINAL_GATEWAY


def test_apply_endpoints_without_gateway_keeps_the_default() -> None:
    restore = apply_endpoints("http://127.0.0.1:1/api/v10", None)
    assert DiscordWebSocket.DEFAULT_GATEWAY == ORIGINAL_GATEWAY
    restore()
    with pytest.raises(ValueError):
        apply_endpoints("http://x/api", "http://not-a-websocket/")
    assert Route.BASE == ORIGINAL_BASE


def test_settings_model_redacts_the_token() -> None:
    model = DiscordSettings(enabled=True, token="s3cr3t-token",
                            api_base_url="http://127.0.0.1:5/api/v10/",
                            gateway_url="ws://127.0.0.1:5/gateway")
    assert model.plain_token() == "s3cr3t-token" == model.credential()
    assert model.api_base_url == "http://127.0.0.1:5/api/v10"
    assert model.gateway_url == "ws://127.0.0.1:5/gateway"
    assert "s3cr3t" not in repr(model) and "s3cr3t" not in str(model)
    with pytest.raises(ValidationError, match="max_ratelimit_wait_s"):
        DiscordSettings(max_ratelimit_wait_s=10)  # discord.py requires at least 30
    defaults = DiscordSettings()
    assert defaults.api_base_url == "https://discord.com/api/v10"
    assert defaults.reidentify_delay_s == 5.0  # Discord's IDENTIFY limit, kept in production
    assert defaults.max_ratelimit_wait_s == 30.0
    adapter = SPEC.create("discord", model)
    assert adapter.capabilities.max_length == 2000
    assert adapter.capabilities.dialect == "discord"
    assert adapter.capabilities.liveness_window_s > 41.25  # above the heartbeat interval
    assert adapter.format_hint


def test_overlapping_overrides_restore_the_originals_last() -> None:
    """A restarted adapter may apply its endpoints before the old run's cleanup restores."""
    old = apply_endpoints("http://127.0.0.1:1/api/v10", "ws://127.0.0.1:1/gateway")
    new = apply_endpoints("http://127.0.0.1:2/api/v10", "ws://127.0.0.1:2/gateway")
    old()
    assert Route.BASE == "http://127.0.0.1:2/api/v10"  # the live client keeps its endpoints
    assert DiscordWebSocket.DEFAULT_GATEWAY == yarl.URL("ws://127.0.0.1:2/gateway")
    new()
    assert Route.BASE == ORIGINAL_BASE
    assert DiscordWebSocket.DEFAULT_GATEWAY == ORIGINAL_GATEWAY


async def test_invalidated_session_identifies_again(tmp_path: Path) -> None:
    async with DiscordHarness(tmp_path) as h:
        # the production pause (5 s, Discord's IDENTIFY limit) is shortened for the test
        h.adapter = SPEC.create("discord", h.fake.settings(guild_ready_timeout_s=0.05,
                                                      reidentify_delay_s=0.05))
        await h.start()
        await _invalidate_and_recover(h)


async def _invalidate_and_recover(discord_h: DiscordHarness) -> None:
    fake = discord_h.fake
    await fake.gateway.invalidate()
    await asyncio.wait_for(fake.gateway.attached.wait(), 20)
    assert len(fake.gateway.resumes) == 1  # tried to resume, got INVALID_SESSION
    assert len(fake.gateway.identifies) == 2
    await fake.user_says("new session", channel=DM_ALICE)
    [ev] = await discord_h.wait_emitted(1)
    assert ev.text == "new session"


async def test_messages_posted_while_down_are_caught_up_after_restart(tmp_path: Path) -> None:
    async with DiscordHarness(tmp_path) as h:
        await h.start()
        await h.fake.user_says("thread before", channel=THREAD, mention_bot=True)
        await h.fake.user_says("dm before", channel=DM_ALICE)
        await h.wait_emitted(2)
        await h.adapter.stop()
        assert h._task is not None
        await asyncio.wait_for(h._task, 10)
        assert "seen_channels" in h.context().cursors.values  # type: ignore[attr-defined]

        # no session is live: Discord will not replay these to a new IDENTIFY
        await h.fake.user_says("thread while down", channel=THREAD, mention_bot=True)
        await h.fake.user_says("dm while down", channel=DM_ALICE)
        h._connected.clear()
        await h.start()
        events = await h.wait_emitted(4)
        late = {e.text: e for e in events[2:]}
        assert set(late) == {"thread while down", "dm while down"}
        assert late["thread while down"].thread_id == str(THREAD)
        assert late["thread while down"].chat_id == str(GENERAL)
        assert late["thread while down"].mentions_bot
        assert late["dm while down"].chat_id == str(DM_ALICE)
        assert h.emit_calls == 4  # the cursor kept the already-emitted ones out
        histories = [p for m, p in h.fake.requests if m == "GET" and p.endswith("/messages")]
        # before the stop: the first message of each channel new to the cursor looked for
        # older ones once; after it: the two channels of the cursor, and the guild's
        # channel it has not seen yet
        assert sorted(histories) == sorted(f"/api/v10/channels/{c}/messages"
                                           for c in (THREAD, DM_ALICE,
                                                     THREAD, DM_ALICE, GENERAL))


async def test_a_first_message_in_a_channel_posted_while_down_is_caught_up(
        tmp_path: Path) -> None:
    """Found by the chaos suite's replica mode (seed 2022): the first message of a guild
    channel came while no session was live (the Discord intake was moving between
    replicas); the catch-up read only the channels of its cursor, so it was never seen."""
    async with DiscordHarness(tmp_path) as h:
        await h.start()
        await h.fake.user_says("dm before", channel=DM_ALICE)
        await h.wait_emitted(1)
        await h.adapter.stop()
        assert h._task is not None
        await asyncio.wait_for(h._task, 10)
        await h.fake.user_says("first in general", channel=GENERAL, mention_bot=True)
        h._connected.clear()
        await h.start()
        events = await h.wait_emitted(2)
        assert [e.text for e in events][1:] == ["first in general"]
        assert events[1].chat_id == str(GENERAL) and events[1].mentions_bot
        assert h.emit_calls == 2


async def test_message_content_intent_off_in_the_portal_is_fatal(tmp_path: Path) -> None:
    async with DiscordHarness(tmp_path) as h:
        h.fake.gateway.message_content_enabled = False
        with pytest.raises(AdapterAuthError, match="developer portal"):
            await h.start()


async def test_a_message_the_gateway_could_not_record_is_caught_up_after_restart(
        tmp_path: Path) -> None:
    """Found by the chaos suite (seed 1515, disk full): Discord has no acks, so a message
    whose recording failed was gone once a later message of its channel moved the catch-up
    cursor past it. Now the adapter stops at that message (an error: the supervisor restarts
    it) and the catch-up after the restart brings it, and what followed it, in order."""
    async with DiscordHarness(tmp_path) as h:
        await h.start()
        await h.fake.user_says("first", channel=DM_ALICE)
        await h.wait_emitted(1)
        h.fail_once.add("second")
        await h.fake.user_says("second", channel=DM_ALICE)
        await h.fake.user_says("third", channel=DM_ALICE)
        assert h._task is not None
        with pytest.raises(Exception):  # noqa: B017 - any adapter error: the supervisor restarts
            await asyncio.wait_for(h._task, 10)
        h._connected.clear()
        await h.start()
        events = await h.wait_emitted(3)
        assert [e.text for e in events] == ["first", "second", "third"]


async def test_failure_before_ready_then_restart_still_catches_up(tmp_path: Path) -> None:
    """Found by the long chaos run (seed 772018, disk full): the adapter failed on a message
    while the first client was still waiting for its guilds (before on_ready, the production
    guild_ready_timeout is 2 s) and the supervisor restarted it. A newer message of the same
    channel arrived live before the restarted client's on_ready and moved the catch-up cursor
    past the failed one, so the catch-up started after it: lost."""
    async with DiscordHarness(tmp_path) as h:
        h.adapter = SPEC.create("discord", h.fake.settings(guild_ready_timeout_s=1.0))
        await h.start()
        await h.fake.user_says("first", channel=GENERAL, mention_bot=True)
        await h.wait_emitted(1)
        h.fail_once.add("second")
        await h.fake.user_says("second", channel=GENERAL, mention_bot=True)
        assert h._task is not None
        with pytest.raises(Exception):  # noqa: B017 - any adapter error: the supervisor restarts
            await asyncio.wait_for(h._task, 10)
        h._connected.clear()
        await h.start()  # connected: READY received, on_ready (the catch-up) ~1 s later
        await h.fake.user_says("third", channel=GENERAL, mention_bot=True)  # live, before it
        events = await h.wait_emitted(3, timeout_s=10)
        assert sorted(e.text for e in events) == ["first", "second", "third"]
        assert h.fake.gateway.paths.count("/gateway") == 2


async def test_stored_cursor_waits_for_the_catch_up() -> None:
    """While the catch-up of a start is pending, a live message must not move the stored
    cursor of its channel: a kill before the catch-up would skip what only it can bring."""
    cursors = MemoryCursors()
    cursors.values[CURSOR_NAME] = json.dumps({str(GENERAL): [100, 7]})
    seen = SeenChannels(cursors)
    await seen.load()
    await seen.note(GENERAL, 200, 7)  # live, before on_ready
    await seen.note(DM_ALICE, 50, None)  # a channel the loaded cursor did not know
    assert seen.catch_up_points() == {str(GENERAL): (100, 7)}
    stored = json.loads(cursors.values[CURSOR_NAME])
    assert stored.pop("since") == [seen.baseline, None]  # when the cursor was first used
    assert stored == {str(GENERAL): [100, 7], str(DM_ALICE): [50, None]}
    await seen.release()
    assert json.loads(cursors.values[CURSOR_NAME])[str(GENERAL)] == [200, 7]
    assert seen.catch_up_points()[str(GENERAL)] == (200, 7)  # a later session: the live one


async def test_a_live_message_waits_behind_the_catch_up_after_a_restart(
        tmp_path: Path) -> None:
    """Found by the long chaos run (seed 772018, disk full): a message whose recording
    failed came back through the catch-up after the restart, but a newer one arrived live
    first (between READY and the catch-up's end) and was stored, and answered, before it.
    Live messages now wait until the catch-up has emitted its messages."""
    async with DiscordHarness(tmp_path) as h:
        h.adapter = SPEC.create("discord", h.fake.settings(guild_ready_timeout_s=1.0))
        await h.start()
        await h.fake.user_says("first", channel=DM_ALICE)
        await h.wait_emitted(1)
        h.fail_once.add("second")
        await h.fake.user_says("second", channel=DM_ALICE)
        assert h._task is not None
        with pytest.raises(Exception):  # noqa: B017 - any adapter error: the supervisor restarts
            await asyncio.wait_for(h._task, 10)
        h._connected.clear()
        await h.start()  # connected: READY received, on_ready (the catch-up) ~1 s later
        await h.fake.user_says("third", channel=DM_ALICE)  # live, before the catch-up
        events = await h.wait_emitted(3, timeout_s=10)
        assert [e.text for e in events] == ["first", "second", "third"]


class _FullCursors(MemoryCursors):
    """A cursor store on the same full disk as the gateway's records, while `full`."""

    def __init__(self) -> None:
        super().__init__()
        self.full = False

    async def set(self, name: str, value: str) -> None:
        if self.full:
            raise OSError(28, "No space left on device")
        await super().set(name, value)


async def test_a_dms_first_message_whose_recording_failed_is_caught_up_after_the_restart(
        tmp_path: Path) -> None:
    """Found by the chaos suite (seed 41, disk full): the first message of a DM the cursor
    had never seen could not be recorded; the catch-up after the restart read only the
    channels the cursor knew, and the next live message of the DM moved the cursor past
    it: never stored, never answered. Now the run that could not emit it leaves the DM in
    the cursor just before it (kept in memory while the store is full)."""
    async with DiscordHarness(tmp_path) as h:
        h.adapter = SPEC.create("discord", h.fake.settings(guild_ready_timeout_s=1.0))
        cursors = _FullCursors()
        h.context().cursors = cursors
        await h.start()
        await h.fake.user_says("hello", channel=GENERAL, mention_bot=True)
        await h.wait_emitted(1)  # the cursor knows a guild channel, not the DM
        cursors.full = True
        h.fail_once.add("first in the dm")
        await h.fake.user_says("first in the dm", channel=DM_ALICE)
        assert h._task is not None
        with pytest.raises(Exception):  # noqa: B017 - any adapter error: the supervisor restarts
            await asyncio.wait_for(h._task, 10)
        cursors.full = False
        h._connected.clear()
        await h.start()  # the catch-up runs ~1 s after READY
        await h.fake.user_says("second in the dm", channel=DM_ALICE)  # live, before it ends
        events = await h.wait_emitted(3, timeout_s=10)
        assert [e.text for e in events][1:] == ["first in the dm", "second in the dm"]


async def test_a_message_lost_with_a_killed_process_in_a_new_dm_comes_before_the_next(
        tmp_path: Path) -> None:
    """Found by the chaos suite's replica mode (seed 2027): a replica was killed with a
    thread's message on its socket, not yet emitted, in a channel its cursor did not know;
    the next leader's catch-up could not know that channel either, and the channel's next
    live message moved the cursor past the lost one. Now the first live message in a
    channel new to the run's cursor reads that channel's history since the cursor's
    newest position first."""
    async with DiscordHarness(tmp_path) as h:
        h.adapter = SPEC.create("discord", h.fake.settings(guild_ready_timeout_s=0.05))
        cursors = _FullCursors()
        h.context().cursors = cursors
        await h.start()
        await h.fake.user_says("hello", channel=GENERAL, mention_bot=True)
        await h.wait_emitted(1)  # the cursor knows a guild channel, not the DM
        await _die_with_a_dm_unread_then_restart(h, cursors, "lost with the process")
        assert [e.text for e in h.emitted] == ["hello"]
        await h.fake.user_says("next in the dm", channel=DM_ALICE)
        events = await h.wait_emitted(3, timeout_s=10)
        assert [e.text for e in events] == ["hello", "lost with the process",
                                            "next in the dm"]


async def test_a_message_lost_before_the_cursor_knew_any_channel_comes_before_the_next(
        tmp_path: Path) -> None:
    """The same as a fresh deployment (replica chaos seed 2027, under load): the cursor had
    no channel yet when the process died with a DM's first message unread, so "the newest
    position it knew" was nothing. The cursor keeps when it was first used (`since`), and a
    new channel is read from there."""
    async with DiscordHarness(tmp_path) as h:
        h.adapter = SPEC.create("discord", h.fake.settings(guild_ready_timeout_s=0.05))
        cursors = _FullCursors()
        h.context().cursors = cursors
        await h.start()
        await asyncio.sleep(0.3)  # connected, the catch-up ran: the baseline is stored
        assert "since" in json.loads(cursors.values[CURSOR_NAME])
        await _die_with_a_dm_unread_then_restart(h, cursors, "first ever")
        assert h.emitted == []
        await h.fake.user_says("second", channel=DM_ALICE)
        events = await h.wait_emitted(2, timeout_s=10)
        assert [e.text for e in events] == ["first ever", "second"]


async def _die_with_a_dm_unread_then_restart(h: DiscordHarness, cursors: _FullCursors,
                                             text: str) -> None:
    """The process dies with `text` (a DM) posted and never emitted, nothing of it stored
    (the store is full); then a new process (a fresh adapter, only the stored cursor
    survives) starts and its catch-up runs."""
    cursors.full = True
    h.fail_once.add(text)
    await h.fake.user_says(text, channel=DM_ALICE)
    assert h._task is not None
    with pytest.raises(Exception):  # noqa: B017 - the run ends with an adapter error
        await asyncio.wait_for(h._task, 10)
    cursors.full = False
    h.adapter = SPEC.create("discord", h.fake.settings(guild_ready_timeout_s=0.05))
    h._connected.clear()
    await h.start()
    await asyncio.sleep(0.5)  # the catch-up ran: it did not know the DM
