"""Voice replies (issue 18, deliverable 4): when the user spoke and `tts.reply_to_voice` (or
the chat's override) is on, the reply's text is followed by the same reply as a voice note,
synthesized by the fake model's `/audio/speech`. Telegram: a `sendVoice` with OGG/Opus bytes
after the text message; Slack: an uploaded file; Discord: a file attachment. Off by default,
never for a typed message, and a failing speech endpoint costs one notice, never the text."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from adapters.discord import SPEC as DISCORD
from adapters.slack import SPEC as SLACK
from tests.discord.fake_discord import FakeDiscord
from tests.discord.fake_payloads import ALICE, DM_ALICE
from tests.fakes.audio import voice_reply
from tests.fakes.openai_server import FakeOpenAIServer, error, text
from tests.gateway.runtime_harness import runner_for
from tests.media.files import ogg_voice, wav
from tests.multiuser.support import until
from tests.multiuser.telegram_harness import ADA, BOB, Group, group_gateway
from tests.slack.fake_slack import FakeSlack

pytestmark = pytest.mark.timeout(240)

REPLY = ("**Sure**: the table for two is booked at eight.\n\n```python\nbook(2, '20:00')\n```\n\n"
         "Details are at [the site](https://example.com/booking).")


#: A voice note costs an audio child process (its start is slow on a loaded machine).
PATIENCE = 40.0


def _voices(g: Group, chat: str) -> list[Any]:
    return [m for m in g.api.bot_messages(chat) if m.kind == "voice"]


async def test_telegram_a_voice_note_gets_a_voice_reply_after_the_text(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model, tts__reply_to_voice=True,
                             tts__voice="nova") as g:
        model.enqueue(text(REPLY))
        await g.turn(g.ada_dm, ADA, "", "Sure: the table for two is booked at eight.",
                     voice=ogg_voice(1.0), timeout_s=PATIENCE)
        await until(lambda: bool(_voices(g, g.ada_dm)), "the voice reply", PATIENCE)
        [voice] = _voices(g, g.ada_dm)
        assert voice.data == voice_reply() and voice.data.startswith(b"OggS")
        [reply] = [m for m in g.api.bot_messages(g.ada_dm) if m.text.startswith("Sure")]
        assert reply.message_id < voice.message_id  # the text first
        [speech] = model.speeches
        assert (speech.model, speech.voice, speech.response_format) == ("tts-1", "nova", "opus")
        # What is said: the reply without Markdown, code or link targets.
        assert speech.input.startswith("Sure: the table for two is booked at eight.")
        assert "**" not in speech.input and "book(2" not in speech.input
        assert "https://" not in speech.input and "the site" in speech.input
        assert len(g.api.calls_of("sendVoice")) == 1


async def test_voice_replies_are_off_by_default_and_never_for_typed_messages(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model) as g:  # tts.reply_to_voice: false
        model.enqueue(text("Heard you."), text("Read you."))
        await g.turn(g.ada_dm, ADA, "", "Heard you.", voice=ogg_voice(1.0), timeout_s=PATIENCE)
        await g.turn(g.ada_dm, ADA, "and typed", "Read you.", timeout_s=PATIENCE)
        assert model.speeches == [] and g.api.calls_of("sendVoice") == []

    async with group_gateway(tmp_path / "on", model, tts__reply_to_voice=True) as g:
        model.enqueue(text("Typed, so read."))
        await g.turn(g.ada_dm, ADA, "just text", "Typed, so read.", timeout_s=PATIENCE)
        model.enqueue(text("Spoken, so said."))
        await g.turn(g.ada_dm, ADA, "", "Spoken, so said.", voice=ogg_voice(1.0),
                     timeout_s=PATIENCE)
        await until(lambda: bool(_voices(g, g.ada_dm)), "the voice reply", PATIENCE)
        assert [s.input for s in model.speeches] == ["Spoken, so said."]


async def test_a_chat_can_have_voice_replies_when_the_rest_do_not(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    ada, bob = str(ADA["id"]), str(BOB["id"])  # a private chat's id is its user's
    async with group_gateway(tmp_path, model, tts__chats={f"telegram:{ada}": True}) as g:
        assert (g.ada_dm, g.bob_dm) == (ada, bob)
        model.enqueue(text("Bob, noted."))
        await g.turn(bob, BOB, "", "Bob, noted.", voice=ogg_voice(1.0), timeout_s=PATIENCE)
        model.enqueue(text("Ada, noted."))
        await g.turn(ada, ADA, "", "Ada, noted.", voice=ogg_voice(1.0), timeout_s=PATIENCE)
        await until(lambda: bool(_voices(g, ada)), "Ada's voice reply", PATIENCE)
        assert _voices(g, bob) == [] and [s.input for s in model.speeches] == ["Ada, noted."]


async def test_a_failing_speech_endpoint_costs_a_notice_never_the_text(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model, tts__reply_to_voice=True) as g:
        model.tts_queue.append(error(400, "Invalid voice 'nova'."))
        model.enqueue(text("Here is the answer."))
        await g.turn(g.ada_dm, ADA, "", "Here is the answer.", voice=ogg_voice(1.0),
                     timeout_s=PATIENCE)
        await until(lambda: any("No voice version of this reply" in m.text
                                for m in g.api.bot_messages(g.ada_dm)), "the notice", PATIENCE)
        [note] = [m.text for m in g.api.bot_messages(g.ada_dm)
                  if "No voice version" in m.text]
        assert "\n" not in note and "HTTP 400: Invalid voice 'nova'." in note
        assert _voices(g, g.ada_dm) == []
        assert [m.text for m in g.api.bot_messages(g.ada_dm)].count("Here is the answer.") == 1


async def test_speech_that_is_not_ogg_is_made_a_voice_note(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model, tts__reply_to_voice=True) as g:
        model.tts_queue.append(wav(1.0, 24000))  # an endpoint that ignores response_format
        model.enqueue(text("Converted."))
        await g.turn(g.ada_dm, ADA, "", "Converted.", voice=ogg_voice(1.0), timeout_s=PATIENCE)
        await until(lambda: bool(_voices(g, g.ada_dm)), "the voice reply", PATIENCE)
        [voice] = _voices(g, g.ada_dm)
        assert voice.data.startswith(b"OggS") and b"OpusHead" in voice.data[:64]


# -- Slack and Discord: the real adapters in-process against their fakes ---------------------

@asynccontextmanager
async def _slack(home: Path, model: FakeOpenAIServer) -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        adapter = SLACK.create("slack", {
            "enabled": True, "bot_token": fake.bot_token, "app_token": fake.app_token,
            "api_base_url": fake.api_url, "allowed_users": ["U0001"]})
        async with runner_for(home, model, adapters={"slack": adapter},
                              compression__enabled=False, tts__reply_to_voice=True):
            await until(lambda: bool(fake.live_sockets()), "the socket connection")
            yield fake


async def test_slack_a_voice_note_gets_an_uploaded_voice_reply(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with _slack(tmp_path, model) as fake:
        model.enqueue(text("Slack heard you."))
        note = fake.add_file("audio_message.ogg", ogg_voice(1.0), "audio/ogg")
        await fake.user_message("", channel="D0001", files=[note])
        await until(lambda: any(m.files for m in fake.bot_messages("D0001")), "the upload",
                    timeout_s=PATIENCE)
        texts = [m for m in fake.bot_messages("D0001") if m.text == "Slack heard you."]
        files = [m for m in fake.bot_messages("D0001") if m.files]
        assert len(texts) == 1 and [m.files for m in files] == [["reply.ogg"]]
        assert fake.bot_messages("D0001").index(texts[0]) < fake.bot_messages("D0001").index(
            files[0])
        [upload] = [u for u in fake.uploads.values() if u["name"] == "reply.ogg"]
        assert upload["data"] == voice_reply()
        assert [s.input for s in model.speeches] == ["Slack heard you."]


@asynccontextmanager
async def _discord(home: Path, model: FakeOpenAIServer) -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        adapter = DISCORD.create("discord", {"enabled": True,
                                             **fake.settings(guild_ready_timeout_s=0.05)})
        async with runner_for(home, model, adapters={"discord": adapter},
                              compression__enabled=False, tts__reply_to_voice=True,
                              gateway__allowed_users=[str(ALICE)]):
            await until(lambda: fake.gateway.attached.is_set(), "IDENTIFY", timeout_s=20)
            await asyncio.sleep(0.1)
            yield fake


async def test_discord_a_voice_note_gets_a_voice_reply_attachment(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with _discord(tmp_path, model) as fake:
        model.enqueue(text("Discord heard you."))
        await fake.user_says("", channel=DM_ALICE,
                             attachment=("voice-message.ogg", ogg_voice(1.0), "audio/ogg"))
        await until(lambda: any(m.attachments for m in fake.bot_messages(DM_ALICE)),
                    "the voice attachment", timeout_s=PATIENCE)
        said = fake.bot_messages(DM_ALICE)
        [reply] = [m for m in said if m.content == "Discord heard you."]
        [voice] = [m for m in said if m.attachments]
        assert reply.id < voice.id
        [att] = voice.attachments
        assert att["filename"] == "reply.ogg"
        assert fake.files[int(att["id"])][1] == voice_reply()
        assert [s.input for s in model.speeches] == ["Discord heard you."]
