"""`stt:` (voice notes in, transcribed) and `tts:` (voice replies out) of `config.yaml`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gateway.config.base import ConfigModel

__all__ = ["SttConfig", "TtsConfig"]

#: The formats OpenAI's `/audio/transcriptions` takes.
_OPENAI_FORMATS = ["flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm"]


class SttConfig(ConfigModel):
    """Speech-to-text for inbound voice notes and audio files (OpenAI-compatible
    `/audio/transcriptions` of `providers.<provider>`)."""

    provider: str = "main"
    model: str = "whisper-1"
    convert: Literal["auto", "always", "never"] = "auto"
    """`auto`: convert a recording whose format is not in `formats` (or that is over the
    25 MB upload limit), and retry converted once when the endpoint refuses the original's
    format; `always`: convert every recording; `never`: send each as it came."""
    formats: list[str] = Field(default_factory=lambda: list(_OPENAI_FORMATS))
    """Formats the endpoint takes (OpenAI's list by default; a whisper.cpp server: `[wav]`)."""
    convert_to: Literal["wav", "flac", "mp3", "ogg"] = "wav"
    """What a converted recording becomes: mono, 16 kHz (OGG: Opus at 48 kHz)."""
    max_seconds: float = Field(default=600.0, gt=0)
    """Longer recordings are not transcribed: the user is told in one line and the message
    reaches the model with a note."""


class TtsConfig(ConfigModel):
    """Voice replies: when the user spoke (a voice note or audio file came with the turn) and
    the chat has them on, the text reply is followed by the same reply as a voice note
    (OpenAI-compatible `/audio/speech` of `providers.<provider>`)."""

    provider: str = "main"
    model: str = "tts-1"
    voice: str = "alloy"
    reply_to_voice: bool = False
    """Answer a voice note with a voice note too (the text reply is always sent)."""
    platforms: dict[str, bool] = Field(default_factory=dict)
    """Platform name → on/off, over `reply_to_voice` for that platform."""
    chats: dict[str, bool] = Field(default_factory=dict)
    """`"<platform>:<chat id>"` → on/off, over `platforms` and `reply_to_voice`."""
    max_chars: int = Field(default=1500, ge=50, le=4096)
    """The spoken text is cut to about this many characters (at a sentence end), with a
    closing note that the rest is in the text."""

    def replies_in(self, platform: str, chat_id: str) -> bool:
        """Whether a voice note is answered with a voice note in this chat."""
        own = self.chats.get(f"{platform}:{chat_id}")
        if own is not None:
            return own
        return self.platforms.get(platform, self.reply_to_voice)
