"""Pure parts: text cleaning, chat types, settings, entry point."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from adapters.slack import SlackSettings
from adapters.slack.adapter import SlackAdapter
from adapters.slack.normalize import BotIdentity, chat_type_for, clean_text, normalize
from adapters.slack.transport import ChatOrder
from gateway.events import ChatType


@pytest.mark.parametrize(("raw", "expected"), [
    ("<@UBOT> hi", "hi"),
    ("hey <@UBOT|hermes>, <@U2|bob> look", "hey , @bob look"),
    ("<@U3> and <#C1|general> <!here>", "@U3 and #general @here"),
    ("<!subteam^S1|@devs> ping", "@devs ping"),
    ("<mailto:a@b.c|a@b.c> <https://e.x>", "a@b.c https://e.x"),
    ("1 &lt; 2 &amp;&amp; 3 &gt; 2", "1 < 2 && 3 > 2"),
])
def test_clean_text(raw: str, expected: str) -> None:
    assert clean_text(raw, "UBOT") == expected


def test_chat_types() -> None:
    assert chat_type_for("im", "D1") is ChatType.DM
    assert chat_type_for("mpim", "G1") is ChatType.GROUP
    assert chat_type_for("channel", "C1") is ChatType.CHANNEL
    assert chat_type_for("group", "G2") is ChatType.CHANNEL
    assert chat_type_for(None, "D9") is ChatType.DM and chat_type_for(None, "C9") is (
        ChatType.CHANNEL)


def test_normalize_ignores_self_and_malformed() -> None:
    ident = BotIdentity(user_id="UBOT", bot_id="BBOT")
    base = {"type": "message", "channel": "C1", "ts": "1.000001", "text": "x", "user": "U1"}
    assert normalize("slack", base, identity=ident, chat_type=ChatType.CHANNEL) is not None
    for bad in ({**base, "user": "UBOT"}, {**base, "bot_id": "BBOT", "user": "U9"},
                {**base, "subtype": "message_deleted"}, {**base, "ts": 5},
                {**base, "text": None}, {k: v for k, v in base.items() if k != "user"},
                {**base, "ts": "not-a-number"}):
        assert normalize("slack", bad, identity=ident, chat_type=ChatType.CHANNEL) is None


def test_settings_model_keeps_secrets_hidden_and_adds_the_trailing_slash() -> None:
    s = SlackSettings(enabled=True, bot_token="xoxb-1", app_token="xapp-1",
                      api_base_url="http://127.0.0.1:5/api",
                      http={"host": "0.0.0.0", "port": 3100, "path": "/ev"})
    assert s.plain() == ("xoxb-1", "xapp-1", "") and s.api_base_url == "http://127.0.0.1:5/api/"
    assert (s.http.host, s.http.port, s.http.path, s.mode) == ("0.0.0.0", 3100, "/ev", "socket")
    assert "xoxb-1" not in repr(s) and "xapp-1" not in str(s)
    assert s.credential() == "xoxb-1"
    with pytest.raises(ValidationError):
        SlackSettings.coerce({"mode": "carrier-pigeon"})
    with pytest.raises(ValidationError, match="http_port"):
        SlackSettings.coerce({"http_port": 3100})  # the key is http.port
    assert SlackSettings.coerce({"timeout_s": 2.5}).timeout_s == 2.5  # not cut to 2 (or 0)


def test_entry_point_builds_the_adapter() -> None:
    from gateway.registry import create_adapter

    adapter = create_adapter("slack", {"bot_token": "x", "app_token": "y"})
    assert isinstance(adapter, SlackAdapter)
    caps = adapter.capabilities
    assert (caps.dialect, caps.max_length, caps.edit, caps.typing, caps.threads) == (
        "slack_mrkdwn", 3900, True, False, True)
    assert caps.liveness_window_s > 0 and adapter.format_hint


def _env(channel: str | None, text: str) -> dict[str, Any]:
    if channel is None:
        return {"type": "hello"}
    return {"type": "events_api", "payload": {"event": {"channel": channel, "text": text}}}


async def test_chat_order_keeps_a_cancelled_envelope_from_stalling_its_chat() -> None:
    seen: list[str] = []
    gate = asyncio.Event()

    async def run(message: dict[str, Any], _raw: str) -> None:
        text = message.get("payload", {}).get("event", {}).get("text", "hello")
        if text == "a1":
            await gate.wait()
        seen.append(text)

    order = ChatOrder()
    ordered = order.wrap(run)
    tasks = [asyncio.ensure_future(ordered(_env(ch, t), ""))
             for ch, t in [("A", "a1"), ("A", "a2"), ("A", "a3"), ("B", "b1"), (None, "")]]
    await asyncio.sleep(0.01)
    assert seen == ["b1", "hello"] and order.pending() == 1
    tasks[1].cancel()  # a2 is dropped while it waits: a3 still runs, after a1
    gate.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert seen == ["b1", "hello", "a1", "a3"] and order.pending() == 0
