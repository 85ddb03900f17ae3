"""Voice notes reach the model as transcripts (issue 18, deliverable 2): sent on Telegram,
transcribed by the fake model's `/audio/transcriptions` with `stt.model`; a failure tells
the user why in one line and the message still reaches the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAIServer, error, text
from tests.media.files import ogg_header, wav
from tests.multiuser.support import until
from tests.multiuser.telegram_harness import ADA, group_gateway


def _user(model: FakeOpenAIServer) -> str:
    content: Any = model.requests[-1].body["messages"][-1]["content"]
    assert isinstance(content, str), content
    return content


async def test_a_voice_note_is_transcribed_into_the_message(tmp_path: Path,
                                                            model: FakeOpenAIServer) -> None:
    recording = wav()
    async with group_gateway(tmp_path, model, stt__model="whisper-large") as g:
        model.stt_queue.append("Please book a table for two at eight.")
        model.enqueue(text("Booked."))
        await g.turn(g.ada_dm, ADA, "", "Booked.", voice=recording)
        [call] = model.transcriptions
        assert call.model == "whisper-large" and call.data == recording
        assert call.filename.endswith(".wav")  # named by its bytes
        sent = _user(model)
        assert ("transcribed by speech-to-text:]\nPlease book a table for two at eight.\n"
                "[end of transcript]") in sent

        # An OGG/Opus voice note goes as .ogg (Telegram names it .oga, which OpenAI refuses).
        model.enqueue(text("Heard."))
        await g.turn(g.ada_dm, ADA, "", "Heard.", voice=ogg_header())
        assert model.transcriptions[-1].filename.endswith(".ogg")
        assert "fake transcript of" in _user(model)


async def test_a_failed_transcription_is_said_and_the_message_still_goes(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model) as g:
        model.stt_queue.append(error(400, "Audio file is too short."))
        model.enqueue(text("I could not hear it, but I got your caption."))
        await g.turn(g.ada_dm, ADA, "about dinner", "I could not hear it, but I got your caption.",
                     voice=wav(0.05))
        sent = _user(model)
        assert "about dinner" in sent and "could not be transcribed" in sent
        notes = [m.text for m in g.api.bot_messages(g.ada_dm)
                 if "could not be transcribed" in m.text]
        assert len(notes) == 1 and "\n" not in notes[0]
        assert "Audio file is too short." in notes[0]


async def test_without_a_stt_provider_the_user_is_told(tmp_path: Path,
                                                       model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model, stt__provider="speech") as g:
        model.enqueue(text("Got it."))
        await g.turn(g.ada_dm, ADA, "", "Got it.", voice=wav())
        await until(lambda: any("stt.provider 'speech' is not among the providers" in m.text
                                for m in g.api.bot_messages(g.ada_dm)), "the reason")
        assert model.transcriptions == []
        assert "could not be transcribed" in _user(model)
