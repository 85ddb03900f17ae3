"""Speech to text for inbound voice notes and audio files: an OpenAI-compatible
`/audio/transcriptions` endpoint through the `openai` SDK (`stt.provider`, `stt.model`).

The file goes as it came, named by what its bytes are (`.ogg`, `.wav`, `.mp3`, …): some
platforms name Opus voice notes `.oga`, which OpenAI refuses by name although it reads OGG/Opus.
Errors become `TranscriptionError` with a one-line reason safe to show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import structlog

from agent_core.provider import load_sdk
from hermes_common.redact import redact

if TYPE_CHECKING:
    import openai

__all__ = ["MAX_BYTES", "OpenAITranscriber", "SttSettings", "Transcriber",
           "TranscriptionError", "audio_suffix"]

log = structlog.get_logger("gateway.media.voice")

#: OpenAI's limit for one transcription upload.
MAX_BYTES = 25 * 1024 * 1024


class TranscriptionError(Exception):
    """No transcript; `reason` is one line for the user."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Transcriber(Protocol):
    async def transcribe(self, data: bytes, filename: str) -> str: ...


def audio_suffix(head: bytes) -> str:
    """The file name suffix an STT endpoint expects for these bytes."""
    if head.startswith(b"OggS"):
        return ".ogg"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return ".wav"
    if head.startswith(b"fLaC"):
        return ".flac"
    if head.startswith(b"\x1aE\xdf\xa3"):
        return ".webm"
    if head[4:8] == b"ftyp":
        return ".m4a"
    return ".mp3"


@dataclass(frozen=True, slots=True)
class SttSettings:
    base_url: str
    api_key: str
    model: str = "whisper-1"
    timeout_s: float = 120.0


class OpenAITranscriber:
    """Implements `Transcriber`. Owns its client: close with `aclose()`."""

    def __init__(self, settings: SttSettings) -> None:
        self._s = settings
        self._client_: openai.AsyncOpenAI | None = None

    @property
    def _client(self) -> openai.AsyncOpenAI:
        # Made with the first recording: the SDK is the process's largest import.
        if self._client_ is None:
            import openai

            self._client_ = openai.AsyncOpenAI(
                base_url=self._s.base_url, api_key=self._s.api_key,
                timeout=self._s.timeout_s, max_retries=1)
        return self._client_

    async def transcribe(self, data: bytes, filename: str) -> str:
        if len(data) > MAX_BYTES:
            raise TranscriptionError(f"the recording is too long ({len(data) // 1_048_576} MB; "
                                     f"the limit is {MAX_BYTES // 1_048_576} MB)")
        sdk = await load_sdk()
        client = self._client

        try:
            got = await client.audio.transcriptions.create(
                model=self._s.model, file=(filename, data))
        except sdk.APITimeoutError:
            raise TranscriptionError("the speech-to-text service took too long") from None
        except sdk.APIStatusError as exc:
            msg = exc.message.splitlines()[0][:160] if exc.message else ""
            raise TranscriptionError(f"the speech-to-text service refused it "
                                     f"(HTTP {exc.status_code}: {redact(msg)})") from None
        except sdk.APIConnectionError:
            raise TranscriptionError("the speech-to-text service could not be reached") from None
        text = (got.text or "").strip()
        if not text:
            raise TranscriptionError("no speech was recognised in the recording")
        return text

    async def aclose(self) -> None:
        if self._client_ is not None:
            await self._client_.close()
