"""Text to speech for voice replies: an OpenAI-compatible `/audio/speech` endpoint through
the `openai` SDK (`tts.provider`, `tts.model`, `tts.voice`), asked for OGG/Opus, the format of
a Telegram voice note that Slack and Discord play too.

`speakable` turns a Markdown reply into what is worth saying: no code blocks, no link
targets, no table rules; cut at a sentence end near `tts.max_chars` with a spoken pointer
to the text. Errors become `SpeechError` with a few words safe to show."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import structlog

from agent_core.provider import load_sdk
from hermes_common.redact import redact
from hermes_common.text import code_fence_ranges, to_plain

__all__ = ["MAX_SPEECH_BYTES", "OpenAISynthesizer", "SpeechError", "Synthesizer", "TtsSettings",
           "speakable"]

if TYPE_CHECKING:
    import openai

log = structlog.get_logger("gateway.media.speech")

#: A synthesized reply longer than this is refused (a 4096-character input is about 1 MB
#: of Opus; a provider streaming without end must not fill the memory).
MAX_SPEECH_BYTES = 16 * 1024 * 1024
_CODE_NOTE = "(code: see the text message)"
_REST_NOTE = "The rest is in the text message."
_URL = re.compile(r"\s*\(?\bhttps?://[^\s)]+\)?")
_TABLE_RULE = re.compile(r"^[\s|:\-]+$")
#: The SDK's prefix of a streamed response's error text (it has no parsed body).
_ERROR_CODE = re.compile(r"^Error code: \d+ - ")


class SpeechError(Exception):
    """No voice reply; `reason` is a few words for the log and the user."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Synthesizer(Protocol):
    async def synthesize(self, text: str) -> bytes:
        """The spoken `text` (OGG/Opus asked for; the caller checks what came). Raises
        SpeechError."""
        ...


@dataclass(frozen=True, slots=True)
class TtsSettings:
    base_url: str
    api_key: str
    model: str = "tts-1"
    voice: str = "alloy"
    timeout_s: float = 60.0


def speakable(markdown: str, max_chars: int = 1500) -> str:
    """What to say for the reply `markdown`: plain text without code blocks, link targets
    or table rules, cut at a sentence end within `max_chars` (with a note that the rest is
    in the text). "" when nothing is left to say. Must not raise."""
    pieces: list[str] = []
    pos = 0
    for start, end in code_fence_ranges(markdown):
        pieces.append(markdown[pos:start])
        pieces.append(f"\n\n{_CODE_NOTE}\n\n")
        pos = end
    pieces.append(markdown[pos:])
    plain = to_plain("".join(pieces))
    lines = []
    for line in plain.splitlines():
        if "|" in line and _TABLE_RULE.match(line):
            continue
        line = _URL.sub("", line).replace(" | ", ", ").strip(" |")
        lines.append(line)
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    if len(text) <= max_chars:
        return text
    room = max_chars - len(_REST_NOTE) - 1
    head = text[:room]
    cut = max(head.rfind(". "), head.rfind("! "), head.rfind("? "), head.rfind("\n"))
    if cut < room // 2:
        cut = head.rfind(" ")
    return f"{head[:cut + 1].rstrip()} {_REST_NOTE}"


class OpenAISynthesizer:
    """Implements `Synthesizer`. Owns its client: close with `aclose()`."""

    def __init__(self, settings: TtsSettings) -> None:
        self._s = settings
        self._made: openai.AsyncOpenAI | None = None

    async def synthesize(self, text: str) -> bytes:
        sdk = await load_sdk()  # off the loop, once; the client is made with the first reply
        if self._made is None:
            self._made = sdk.AsyncOpenAI(base_url=self._s.base_url, api_key=self._s.api_key,
                                         timeout=self._s.timeout_s, max_retries=1)
        chunks: list[bytes] = []
        size = 0
        try:
            async with self._made.audio.speech.with_streaming_response.create(
                    model=self._s.model, voice=self._s.voice, input=text,
                    response_format="opus") as resp:
                async for chunk in resp.iter_bytes():
                    size += len(chunk)
                    if size > MAX_SPEECH_BYTES:
                        raise SpeechError("the text-to-speech service sent too much audio")
                    chunks.append(chunk)
        except sdk.APITimeoutError:
            raise SpeechError("the text-to-speech service took too long") from None
        except sdk.APIStatusError as exc:
            msg = _ERROR_CODE.sub("", exc.message.splitlines()[0])[:160] if exc.message else ""
            raise SpeechError(f"the text-to-speech service refused it "
                              f"(HTTP {exc.status_code}: {redact(msg)})") from None
        except sdk.APIConnectionError:
            raise SpeechError("the text-to-speech service could not be reached") from None
        data = b"".join(chunks)
        if not data:
            raise SpeechError("the text-to-speech service sent no audio")
        return data

    async def aclose(self) -> None:
        if self._made is not None:
            await self._made.close()
