"""`MediaReader`: one turn's inbound attachments, understood.

Each attachment is classified by its bytes (`sniff`), never by its name or the platform's
MIME type. Images go to a vision-capable main model as `image_url` parts of this turn's user
message (resized and re-encoded by `agent_core.web.images`); the stored message keeps only a
text stand-in (and, under `_images`, where each image is cached, so a turn re-run after a
restart sends them again: `parts_for`), so later turns and compression never resend the
image. After the turn `describe_for_history` replaces each stand-in with the vision model's
description. Without a vision main model the auxiliary vision model describes the image
before the turn and the description, marked as such, is the stand-in. Every other file keeps
the `[attachment: …]` line with its per-chat cache path; a file the adapter did not download
(`MessageEvent.skipped`) is a line with the reason. Must not raise for a bad file: what could
not be understood is said in the message and, in one line, to the user.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import structlog

from agent_core.compression.types import Summarizer, SummarizerError
from agent_core.web.images import ImageError, Prepared, data_url, prepare_image
from gateway.events import Attachment, MessageEvent, Principal
from gateway.media.audio import duration_text
from gateway.media.documents import DocumentError, Extracted, cap
from gateway.media.isolation import IsolatedExtractor
from gateway.media.voice import Transcriber, TranscriptionError, audio_suffix

__all__ = ["MediaReader", "MediaSettings", "Sniffed", "Understood", "sniff"]

log = structlog.get_logger("gateway.media")

Sniffed = Literal["image", "pdf", "zip", "ole", "audio", "text", "other"]
_DESCRIBE = ("Describe this image for someone who cannot see it: what it shows, any text in "
             "it (verbatim), and details that may matter. Be concise.")


def sniff(head: bytes) -> Sniffed:
    """What the first bytes of a file say it is."""
    if (head.startswith((b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"BM"))
            or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")
            or head[4:12] in (b"ftypavif", b"ftypheic", b"ftypheix", b"ftypmif1")):
        return "image"
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    if head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return "ole"
    if (head.startswith((b"OggS", b"ID3", b"fLaC", b"\x1aE\xdf\xa3", b"#!AMR"))
            or (head[:4] == b"RIFF" and head[8:12] == b"WAVE")
            or head[4:8] == b"ftyp" or head[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf1")):
        return "audio"
    if b"\x00" not in head:
        try:
            head.decode("utf-8")
            return "text"
        except UnicodeDecodeError as exc:
            if exc.start >= len(head) - 3:  # a character cut at the end of the probe
                return "text"
    return "other"


@dataclass(frozen=True, slots=True)
class MediaSettings:
    #: The main model accepts image parts (`providers.<main>.vision`).
    vision: bool = False
    max_images: int = 4
    describe_max_tokens: int = 600
    #: Extracted document text longer than this is cut (head and tail kept) and saved whole
    #: to the sender's workspace.
    document_max_chars: int = 20_000
    document_timeout_s: float = 60.0
    #: With a vision main model: describe each image after its turn for the history.
    describe_for_history: bool = True


@dataclass
class Understood:
    """The stored user message, the image parts of this turn, and notices for the user."""

    message: dict[str, Any]
    parts: list[dict[str, Any]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    #: The user spoke: a voice note or an audio file came with the turn (transcribed or
    #: not). A voice reply may follow (`tts.reply_to_voice`).
    spoke: bool = False


def _read_head(path: str, n: int = 4096) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(n)


def _label(att: Attachment) -> str:
    return att.name or Path(att.path).name


def _shown_line(number: int, name: str, image: Prepared) -> str:
    return (f"[image {number} ({name}, {image.mime}, {image.width}x{image.height}) is "
            "attached to this message; in later turns only this line (or the image's "
            "description) remains — vision_analyze can look at it again]")


def _shown(message: dict[str, Any]) -> list[dict[str, Any]]:
    entries = message.get("_images")
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("path"), str)
            and isinstance(e.get("line"), str)]


def attachment_line(att: Attachment) -> str:
    return f"[attachment: {att.kind} {att.name or ''} at {att.path}]".replace("  ", " ")


class MediaReader:
    def __init__(self, settings: MediaSettings = MediaSettings(), *,
                 describer: Summarizer | None = None,
                 workspace: Callable[[Principal], Path] | None = None,
                 transcriber: Transcriber | None = None,
                 stt_off: str = "no speech-to-text provider is configured (stt.provider)",
                 documents: IsolatedExtractor | None = None) -> None:
        self._s = settings
        self._describer = describer
        self._workspace = workspace
        self._transcriber = transcriber
        self._stt_off = stt_off
        self._documents = documents or IsolatedExtractor()

    def with_workspace(self, workspace: Callable[[Principal], Path]) -> MediaReader:
        """The same reader (the same document reader process), saving long documents to
        `workspace(sender)`."""
        return MediaReader(self._s, describer=self._describer, workspace=workspace,
                           transcriber=self._transcriber, stt_off=self._stt_off,
                           documents=self._documents)

    async def aclose(self) -> None:
        """Stop the document reader process. Must not raise."""
        await self._documents.aclose()

    async def read(self, events: Sequence[MessageEvent]) -> Understood:
        texts: list[str] = []
        out = Understood(message={})
        images = 0
        shown: list[dict[str, Any]] = []
        for ev in events:
            lines = [ev.text] if ev.text else []
            for skipped in ev.skipped:
                lines.append(f"[attachment {skipped.name} not downloaded: {skipped.reason}]")
                out.notices.append(f"⚠️ {skipped.name} was not downloaded: {skipped.reason}.")
            for att in ev.attachments:
                try:
                    kind = sniff(await asyncio.to_thread(_read_head, att.path))
                except OSError as exc:
                    log.warning("media_unreadable", error=type(exc).__name__)
                    lines.append(attachment_line(att))
                    continue
                if kind == "image":
                    images += 1
                    lines.extend(await self._image(att, images, out, shown))
                elif att.kind == "video":
                    lines.append(attachment_line(att))  # videos are not understood (yet)
                elif kind == "audio" or (kind == "other" and att.kind in ("voice", "audio")):
                    lines.extend(await self._audio(att, out))
                elif kind in ("pdf", "zip", "ole", "text"):
                    lines.extend(await self._document(ev, att, kind, out))
                else:
                    lines.append(attachment_line(att))
            texts.append("\n".join(lines))
        msg: dict[str, Any] = {"role": "user", "content": "\n".join(t for t in texts if t)}
        msg["_event_ids"] = [f"{e.platform}:{e.event_id}" for e in events]
        if shown:
            msg["_images"] = shown
        if events[-1].message_id:
            msg["_platform_message_id"] = events[-1].message_id
        out.message = msg
        return out

    async def _image(self, att: Attachment, number: int, out: Understood,
                     shown: list[dict[str, Any]]) -> list[str]:
        name = _label(att)
        lines = [attachment_line(att)]
        if number > self._s.max_images:
            lines.append(f"[image {number} ({name}) not shown: at most {self._s.max_images} "
                         "images per message]")
            out.notices.append(f"⚠️ {name}: not shown to the model (at most "
                               f"{self._s.max_images} images per message).")
            return lines
        if not self._s.vision and self._describer is None:
            lines.append(f"[image {number} ({name}) not shown: no vision model is configured]")
            return lines
        try:
            raw = await asyncio.to_thread(Path(att.path).read_bytes)
            image = await asyncio.to_thread(prepare_image, raw)
        except (OSError, ImageError) as exc:
            why = str(exc) if isinstance(exc, ImageError) else "the file could not be read"
            lines.append(f"[image {number} ({name}) could not be read: {why}]")
            out.notices.append(f"⚠️ {name}: the image could not be read ({why}).")
            return lines
        part = {"type": "image_url", "image_url": {"url": data_url(image)}}
        if self._s.vision:
            out.parts.append(part)
            line = _shown_line(number, name, image)
            lines.append(line)
            shown.append({"path": att.path, "name": name, "number": number, "line": line})
            log.info("media_image_attached", mime=image.mime, reencoded=image.reencoded)
            return lines
        described = await self._describe(name, number, image, part)
        if described is None:
            lines.append(f"[image {number} ({name}) could not be described: the vision model "
                         "failed]")
            out.notices.append(f"⚠️ {name}: the image could not be described (the vision "
                               "model failed); your text was still sent.")
        else:
            lines.append(described)
        return lines

    async def _describe(self, name: str, number: int, image: Prepared,
                        part: dict[str, Any]) -> str | None:
        text = await self._ask_vision(part)
        if text is None:
            return None
        log.info("media_image_described", mime=image.mime)
        return (f"[image {number} ({name}), described by the vision model because you cannot "
                f"see images:]\n{text}\n[end of image {number} description]")

    async def _ask_vision(self, part: dict[str, Any]) -> str | None:
        assert self._describer is not None
        messages = [{"role": "user", "content": [{"type": "text", "text": _DESCRIBE}, part]}]
        try:
            text = await self._describer.summarize(messages,
                                                   max_tokens=self._s.describe_max_tokens)
        except SummarizerError as exc:
            log.warning("media_image_description_failed", kind=exc.kind)
            return None
        return text.strip() or None

    # -- images in the history ----------------------------------------------------------
    async def parts_for(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """The image parts of a stored user message whose images were shown to a vision
        main model (`_images`), read again from the chat cache: a turn re-run after a
        restart sends them as the first run did. An image no longer cached is left out
        (its line stays). Empty when the images were already described for the history."""
        if not self._s.vision or message.get("_images_described"):
            return []
        parts = []
        for entry in _shown(message):
            try:
                raw = await asyncio.to_thread(Path(str(entry["path"])).read_bytes)
                image = await asyncio.to_thread(prepare_image, raw)
            except (OSError, ImageError) as exc:
                log.info("media_image_not_resent", error=type(exc).__name__)
                continue
            parts.append({"type": "image_url", "image_url": {"url": data_url(image)}})
        return parts

    def wants_description(self, message: dict[str, Any]) -> bool:
        """Whether `describe_for_history` has work for this stored message."""
        return (self._s.vision and self._s.describe_for_history and self._describer is not None
                and bool(_shown(message)) and not message.get("_images_described"))

    async def describe_for_history(self, message: dict[str, Any],
                                   parts: Sequence[dict[str, Any]]) -> str | None:
        """The message's content with each shown image's line replaced by the vision
        model's description (`parts`: the turn's image parts, in `_images` order; read
        again from the cache when missing). None when no image could be described: the
        lines stay as they are (they say `vision_analyze` can look again). Must not raise."""
        if not self.wants_description(message):
            return None
        content = str(message.get("content") or "")
        given = list(parts) if len(parts) == len(_shown(message)) else None
        if given is None:
            given = await self.parts_for({**message, "_images_described": False})
            if len(given) != len(_shown(message)):
                return None
        described = 0
        for entry, part in zip(_shown(message), given, strict=True):
            line, number, name = str(entry["line"]), entry["number"], entry["name"]
            text = await self._ask_vision(part)
            if text is None or line not in content:
                continue
            content = content.replace(line, (
                f"[image {number} ({name}) was shown to you in this turn; the vision model's "
                f"description of it:]\n{text}\n[end of image {number} description]"), 1)
            described += 1
        log.info("media_images_described_for_history", images=len(given), described=described)
        return content if described else None

    async def _document(self, ev: MessageEvent, att: Attachment, kind: Sniffed,
                        out: Understood) -> list[str]:
        name = _label(att)
        lines = [attachment_line(att)]
        try:
            if kind == "ole":
                raise DocumentError("the document is password-protected, or an old binary "
                                    "Office format that is not read")
            got = await self._documents.extract(Path(att.path), kind,
                                         timeout_s=self._s.document_timeout_s)
        except (DocumentError, OSError) as exc:
            why = str(exc) if isinstance(exc, DocumentError) else "the file could not be read"
            log.info("media_document_unreadable", kind=kind, reason=why)
            lines.append(f"[{name} could not be read: {why}]")
            out.notices.append(f"⚠️ {name}: could not be read ({why}).")
            return lines
        if got is None:
            return lines
        text, cut = cap(got.text, self._s.document_max_chars)
        where = await self._save_whole(ev, name, got) if cut else None
        what = got.kind + (f", {got.pages} pages" if got.pages is not None else "")
        if got.pages is not None and got.pages_read is not None and got.pages_read < got.pages:
            what += f", the first {got.pages_read} read"
        note = ""
        if cut:
            note = (f"; {len(got.text)} characters, the middle {cut} cut below"
                    + (f"; the whole text is in your workspace at {where}" if where else ""))
        log.info("media_document_extracted", kind=got.kind, chars=len(got.text), cut=cut)
        lines.append(f"[text of {name} ({what}{note}):]\n{text}\n[end of {name}]")
        return lines

    async def _save_whole(self, ev: MessageEvent, name: str, got: Extracted) -> str | None:
        """Save the whole text into the sender's workspace; the path relative to it."""
        if self._workspace is None:
            return None
        root = self._workspace(ev.principal)
        stem = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:80] or "document"
        rel = Path("documents") / f"{stem}.txt"

        def save() -> None:
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            target.write_text(got.text, encoding="utf-8")

        try:
            await asyncio.to_thread(save)
        except OSError as exc:
            log.warning("media_document_not_saved", error=type(exc).__name__)
            return None
        return str(rel)

    async def _audio(self, att: Attachment, out: Understood) -> list[str]:
        name = _label(att)
        what = "voice message" if att.kind == "voice" else "audio file"
        lines = [attachment_line(att)]
        out.spoke = True
        try:
            if self._transcriber is None:
                raise TranscriptionError(self._stt_off)
            data = await asyncio.to_thread(Path(att.path).read_bytes)
            filename = Path(name).stem + audio_suffix(data[:16])
            transcript = await self._transcriber.transcribe(data, filename)
        except (TranscriptionError, OSError) as exc:
            why = exc.reason if isinstance(exc, TranscriptionError) else "it could not be read"
            log.info("media_transcription_failed", kind=att.kind, reason=why)
            lines.append(f"[{what} {name} could not be transcribed: {why}]")
            out.notices.append(f"⚠️ Your {what} could not be transcribed: {why}.")
            return lines
        log.info("media_transcribed", kind=att.kind, chars=len(transcript.text),
                 seconds=transcript.seconds, converted_to=transcript.converted_to)
        length = f" ({duration_text(transcript.seconds)})" if transcript.seconds else ""
        lines.append(f"[{what} {name}{length}, transcribed by speech-to-text:]\n"
                     f"{transcript.text}\n[end of transcript]")
        return lines
