"""`VoiceReplies`: the spoken version of a reply, sent as a voice note after its text.

When the user spoke (a voice note or audio file came with the turn) and the chat has voice
replies on (`tts.reply_to_voice`, `tts.platforms`, `tts.chats`), the delivered text reply is
made speakable (`speakable`), synthesized (`Synthesizer`), made OGG/Opus when the endpoint
sent anything else (`gateway.media.audio`, in its child process), and sent as a voice note
(Telegram `sendVoice`; a file upload on Slack and Discord). It is an extra: it is sent only
after the text went out, is not in the outbox (a restart in between loses the voice note,
never the text), and a failure costs one short notice, never the reply.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

import structlog

from gateway.delivery.service import ReplyTarget
from gateway.events import SendResult
from gateway.media.audio import AudioError, examine_isolated
from gateway.media.speech import SpeechError, Synthesizer, speakable

__all__ = ["VoiceOut", "VoiceReplies"]

log = structlog.get_logger("gateway.media.replies")

VOICE_NAME = "reply.ogg"


class VoiceOut(Protocol):
    """What a voice reply needs of delivery (`DeliveryService` implements it)."""

    def takes_files(self, adapter: str) -> bool: ...

    async def send_voice(self, target: ReplyTarget, data: bytes, name: str) -> SendResult: ...

    async def notify(self, target: ReplyTarget, text: str) -> bool: ...


class VoiceReplies:
    def __init__(self, synthesizer: Synthesizer | None, *,
                 enabled: Callable[[str, str], bool], max_chars: int = 1500,
                 timeout_s: float = 120.0, off_reason: str = "") -> None:
        """`enabled(platform, chat id)`: voice replies are on in that chat. Without a
        `synthesizer` (no usable `tts.provider`) none is made; `off_reason` says why in
        the log."""
        self._synth = synthesizer
        self._enabled = enabled
        self._max_chars = max_chars
        self._timeout_s = timeout_s
        self._off_reason = off_reason

    def wanted(self, target: ReplyTarget, *, spoke: bool) -> bool:
        """A voice reply is due for this turn: the user spoke and the chat has them on."""
        return spoke and self._enabled(target.adapter, target.chat_id)

    async def reply(self, out: VoiceOut, target: ReplyTarget, text: str) -> bool:
        """Speak `text` (the delivered reply, Markdown) into the chat. True when the voice note
        went out. Must not raise (cancellation aside)."""
        if self._synth is None:
            log.warning("voice_reply_off", adapter=target.adapter, reason=self._off_reason)
            return False
        if not out.takes_files(target.adapter):
            log.info("voice_reply_skipped", adapter=target.adapter, reason="no files")
            return False
        spoken = speakable(text, self._max_chars)
        if not spoken:
            return False
        try:
            data = await asyncio.wait_for(self._synth.synthesize(spoken), self._timeout_s)
            if not data.startswith(b"OggS"):  # not what was asked: make it a voice note
                converted = await examine_isolated(data, max_seconds=3600, convert="always",
                                                   target="ogg")
                data = converted.data or b""
        except (SpeechError, AudioError) as exc:
            return await self._failed(out, target, exc.reason)
        except TimeoutError:
            return await self._failed(out, target, "the text-to-speech service took too long")
        except Exception as exc:  # noqa: BLE001 - a voice reply must never break the turn
            log.exception("voice_reply_crashed", adapter=target.adapter)
            return await self._failed(out, target, type(exc).__name__)
        res = await out.send_voice(target, data, VOICE_NAME)
        if not res.ok:
            log.warning("voice_reply_not_sent", adapter=target.adapter, kind=str(res.error_kind))
            return False
        log.info("voice_reply_sent", adapter=target.adapter, chars=len(spoken), bytes=len(data))
        return True

    async def _failed(self, out: VoiceOut, target: ReplyTarget, reason: str) -> bool:
        log.warning("voice_reply_failed", adapter=target.adapter, reason=reason)
        await out.notify(target, f"⚠️ No voice version of this reply: {reason}.")
        return False
