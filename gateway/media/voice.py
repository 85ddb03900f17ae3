"""Speech to text for inbound voice notes and audio files: an OpenAI-compatible
`/audio/transcriptions` endpoint through the `openai` SDK (`stt.provider`, `stt.model`).

Every recording is first examined in a child process (`gateway.media.audio`): what it is by
its bytes, how long it lasts (over `stt.max_seconds` it is refused before any upload), and
whether it decodes at all. It goes as it came when the endpoint takes its format
(`stt.formats`), named by what it is (`.ogg`, `.wav`, …: some platforms name Opus voice notes
`.oga`, which OpenAI refuses by name although it reads OGG/Opus); otherwise, or when it is over
the upload limit, or always with `stt.convert: always`, it is converted (`stt.convert_to`,
mono). With `auto`, an endpoint that refuses the original's format (HTTP 400/415 naming the
format) gets one converted retry. Errors become `TranscriptionError` with a one-line reason
safe to show."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import structlog

from agent_core.provider import load_sdk
from gateway.media.audio import Audio, AudioError, ConvertMode, examine_isolated
from hermes_common.redact import redact

__all__ = ["MAX_BYTES", "OPENAI_FORMATS", "OpenAITranscriber", "SttSettings", "Transcriber",
           "Transcript", "TranscriptionError", "audio_suffix"]

if TYPE_CHECKING:
    import openai

log = structlog.get_logger("gateway.media.voice")

#: OpenAI's limit for one transcription upload.
MAX_BYTES = 25 * 1024 * 1024
#: The formats OpenAI's `/audio/transcriptions` takes (by file name).
OPENAI_FORMATS = ("flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm")


class TranscriptionError(Exception):
    """No transcript; `reason` is one line for the user."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Transcript:
    text: str
    #: How long the recording lasts (None when it was not measured).
    seconds: float | None = None
    #: The format it was converted to before the upload, or None when it went as it came.
    converted_to: str | None = None


class Transcriber(Protocol):
    async def transcribe(self, data: bytes, filename: str) -> Transcript:
        """The transcript of the recording `data` (sent as `filename`). Raises
        TranscriptionError."""
        ...


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
    #: auto: convert what the endpoint does not take; always; never (send as it came).
    convert: ConvertMode = "auto"
    formats: Collection[str] = OPENAI_FORMATS
    convert_to: str = "wav"
    max_seconds: float = 600.0
    #: Time allowed to examine and convert one recording (the child process).
    examine_timeout_s: float = 60.0


def _refuses_format(exc: openai.APIStatusError) -> bool:
    text = (exc.message or "").lower()
    return exc.status_code == 415 or (exc.status_code == 400 and any(
        word in text for word in ("format", "codec", "decode", "unsupported", "invalid file")))


class OpenAITranscriber:
    """Implements `Transcriber`. Owns its client: close with `aclose()`."""

    def __init__(self, settings: SttSettings) -> None:
        self._s = settings
        self._made: openai.AsyncOpenAI | None = None

    async def _client(self) -> openai.AsyncOpenAI:
        """Made with the first recording: the SDK loads off the loop (`load_sdk`)."""
        if self._made is None:
            sdk = await load_sdk()
            self._made = sdk.AsyncOpenAI(base_url=self._s.base_url, api_key=self._s.api_key,
                                         timeout=self._s.timeout_s, max_retries=1)
        return self._made

    async def _examine(self, data: bytes, convert: ConvertMode) -> Audio:
        s = self._s
        try:
            return await examine_isolated(
                data, max_seconds=s.max_seconds, convert=convert, accept=frozenset(s.formats),
                target=s.convert_to, max_bytes=MAX_BYTES, timeout_s=s.examine_timeout_s)
        except AudioError as exc:
            raise TranscriptionError(exc.reason) from None

    async def transcribe(self, data: bytes, filename: str) -> Transcript:
        audio = await self._examine(data, self._s.convert)
        sdk = await load_sdk()
        try:
            return await self._upload(data, filename, audio)
        except sdk.APIStatusError as exc:
            if audio.converted_to is None and self._s.convert == "auto" and _refuses_format(exc):
                log.info("stt_format_refused", format=audio.format, status=exc.status_code)
                converted = await self._examine(data, "always")
                try:
                    return await self._upload(data, filename, converted)
                except sdk.APIStatusError as again:
                    raise _refused(again) from None
            raise _refused(exc) from None

    async def _upload(self, data: bytes, filename: str, audio: Audio) -> Transcript:
        """Send the recording (converted, when it was); raises APIStatusError as is, other
        failures as TranscriptionError."""
        body = audio.data if audio.data is not None else data
        name = f"{Path(filename).stem or 'voice'}.{audio.converted_to or audio.format}"
        if len(body) > MAX_BYTES:
            raise TranscriptionError(f"the recording is too large ({len(body) // 1_048_576} MB;"
                                     f" the limit is {MAX_BYTES // 1_048_576} MB)")
        client = await self._client()
        sdk = await load_sdk()
        try:
            got = await client.audio.transcriptions.create(model=self._s.model, file=(name, body))
        except sdk.APITimeoutError:
            raise TranscriptionError("the speech-to-text service took too long") from None
        except sdk.APIConnectionError:
            raise TranscriptionError("the speech-to-text service could not be reached") from None
        text = (got.text or "").strip()
        if not text:
            raise TranscriptionError("no speech was recognised in the recording")
        return Transcript(text, audio.seconds, audio.converted_to)

    async def aclose(self) -> None:
        if self._made is not None:
            await self._made.close()


def _refused(exc: openai.APIStatusError) -> TranscriptionError:
    msg = exc.message.splitlines()[0][:160] if exc.message else ""
    return TranscriptionError(f"the speech-to-text service refused it "
                              f"(HTTP {exc.status_code}: {redact(msg)})")
