"""Voice notes reach the model as transcripts (issue 18, deliverable 2): sent on Telegram
(the real adapter against the fake Bot API), examined and, where the endpoint needs it,
converted in the gateway's audio child process, transcribed by the fake model's
`/audio/transcriptions` with `stt.model`. A failure (no provider, refused, too long, damaged)
tells the user why in one line, and the message still reaches the model with a note."""

from __future__ import annotations

import io
import os
import wave
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import FakeOpenAIServer, error, text
from tests.media.files import ogg_header, ogg_voice, wav
from tests.multiuser.support import until
from tests.multiuser.telegram_harness import ADA, Group, group_gateway

#: A voice note costs an audio child process (its start is slow on a loaded machine).
PATIENCE = 40.0
pytestmark = pytest.mark.timeout(240)


def _user(model: FakeOpenAIServer) -> str:
    content: Any = model.requests[-1].body["messages"][-1]["content"]
    assert isinstance(content, str), content
    return content


def _notices(g: Group, words: str) -> list[str]:
    return [m.text for m in g.api.bot_messages(g.ada_dm) if words in m.text]


async def test_an_ogg_voice_note_is_transcribed_into_the_message(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    note = ogg_voice(1.5)
    async with group_gateway(tmp_path, model, stt__model="whisper-large") as g:
        model.stt_queue.append("Please book a table for two at eight.")
        model.enqueue(text("Booked."))
        await g.turn(g.ada_dm, ADA, "", "Booked.", voice=note, timeout_s=PATIENCE)
        [call] = model.transcriptions
        # OGG/Opus is a format the endpoint takes: it goes as it came, named by its bytes.
        assert call.model == "whisper-large" and call.data == note
        assert call.filename.endswith(".ogg")
        sent = _user(model)
        assert ("(2 s), transcribed by speech-to-text:]\nPlease book a table for two at eight."
                "\n[end of transcript]") in sent

        recording = wav()
        model.enqueue(text("Heard."))
        await g.turn(g.ada_dm, ADA, "", "Heard.", voice=recording, timeout_s=PATIENCE)
        assert model.transcriptions[-1].data == recording
        assert model.transcriptions[-1].filename.endswith(".wav")
        assert "fake transcript of" in _user(model)


async def test_a_voice_note_is_converted_for_an_endpoint_that_wants_wav(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model, stt__formats=["wav"]) as g:
        model.stt_queue.append("converted and heard")
        model.enqueue(text("Noted."))
        await g.turn(g.ada_dm, ADA, "", "Noted.", voice=ogg_voice(1.5), timeout_s=PATIENCE)
        [call] = model.transcriptions
        assert call.filename.endswith(".wav")
        with wave.open(io.BytesIO(call.data)) as w:  # a real WAV: mono, 16 kHz, 1.5 s
            assert (w.getnchannels(), w.getframerate(), w.getsampwidth()) == (1, 16000, 2)
            assert abs(w.getnframes() / 16000 - 1.5) < 0.05
        assert "converted and heard" in _user(model)


async def test_an_endpoint_refusing_the_format_gets_one_converted_retry(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model) as g:
        model.stt_queue.extend([error(400, "Invalid file format. Supported formats: ['wav']"),
                                "heard on the second try"])
        model.enqueue(text("Good."))
        await g.turn(g.ada_dm, ADA, "", "Good.", voice=ogg_voice(1.0), timeout_s=PATIENCE)
        first, second = model.transcriptions
        assert first.filename.endswith(".ogg") and first.data.startswith(b"OggS")
        assert second.filename.endswith(".wav") and second.data[8:12] == b"WAVE"
        assert "heard on the second try" in _user(model)
        assert _notices(g, "could not be transcribed") == []


async def test_too_long_a_recording_is_refused_with_a_reason_and_the_message_goes(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model, stt__max_seconds=2) as g:
        model.enqueue(text("Too long to hear, but I have your words."))
        await g.turn(g.ada_dm, ADA, "about the trip", "Too long to hear, but I have your words.",
                     voice=ogg_voice(3.0), timeout_s=PATIENCE)
        assert model.transcriptions == []  # refused before any upload
        [note] = _notices(g, "could not be transcribed")
        assert "\n" not in note and "it is 3 s long; at most 2 s are transcribed" in note
        sent = _user(model)
        assert "about the trip" in sent
        assert "could not be transcribed: it is 3 s long; at most 2 s are transcribed]" in sent


async def test_damaged_audio_gets_a_clear_reason(tmp_path: Path,
                                                 model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model) as g:
        model.enqueue(text("That one did not play."), text("Nor that one."))
        await g.turn(g.ada_dm, ADA, "", "That one did not play.",
                     voice=b"OggS" + os.urandom(3000), timeout_s=PATIENCE)
        await g.turn(g.ada_dm, ADA, "", "Nor that one.", voice=ogg_header(),  # no audio
                     timeout_s=PATIENCE)
        assert model.transcriptions == []
        notes = _notices(g, "could not be transcribed")
        assert len(notes) == 2 and all("\n" not in n for n in notes)
        assert all("the recording is damaged or not audio that can be read" in n for n in notes)
        assert "could not be transcribed: the recording is damaged" in _user(model)


async def test_a_failed_transcription_is_said_and_the_message_still_goes(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model) as g:
        model.stt_queue.append(error(400, "Audio file is too short."))
        model.enqueue(text("I could not hear it, but I got your caption."))
        await g.turn(g.ada_dm, ADA, "about dinner", "I could not hear it, but I got your caption.",
                     voice=wav(0.05), timeout_s=PATIENCE)
        sent = _user(model)
        assert "about dinner" in sent and "could not be transcribed" in sent
        [note] = _notices(g, "could not be transcribed")
        assert "\n" not in note and "Audio file is too short." in note
        assert len(model.transcriptions) == 1  # not a format refusal: no converted retry


async def test_without_a_stt_provider_the_user_is_told(tmp_path: Path,
                                                       model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model, stt__provider="speech") as g:
        model.enqueue(text("Got it."))
        await g.turn(g.ada_dm, ADA, "", "Got it.", voice=wav(), timeout_s=PATIENCE)
        await until(lambda: any("stt.provider 'speech' is not among the providers" in m.text
                                for m in g.api.bot_messages(g.ada_dm)), "the reason", PATIENCE)
        assert model.transcriptions == []
        assert "could not be transcribed" in _user(model)
