"""Small real files made in the test: images, documents, audio."""

from __future__ import annotations

import io

from PIL import Image

from tests.fakes.audio import ogg_opus


def jpeg(size: tuple[int, int] = (64, 48), colour: tuple[int, int, int] = (220, 20, 20)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="JPEG")
    return buf.getvalue()


def png(size: tuple[int, int] = (32, 32)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGBA", size, (20, 20, 220, 255)).save(buf, format="PNG")
    return buf.getvalue()


def pdf(pages: list[str], *, password: str | None = None) -> bytes:
    """A real PDF with one line of text per page (reportlab), optionally encrypted."""
    from reportlab.lib.pdfencrypt import StandardEncryption
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    enc = StandardEncryption(password, ownerPassword=password + "-owner") if password else None
    c = canvas.Canvas(buf, encrypt=enc)
    for line in pages:
        c.drawString(72, 720, line)
        c.showPage()
    c.save()
    return buf.getvalue()


def docx_bytes(paragraphs: list[str], table: list[list[str]] | None = None) -> bytes:
    import docx

    doc = docx.Document()
    for p in paragraphs:
        doc.add_paragraph(p)
    if table:
        t = doc.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                t.cell(r, c).text = value
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def wav(seconds: float = 0.3, rate: int = 8000) -> bytes:
    """A real mono 16-bit WAV: a 440 Hz tone."""
    import math
    import struct
    import wave

    frames = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate)))
                      for i in range(int(seconds * rate)))
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(frames)
    return buf.getvalue()


def ogg_header() -> bytes:
    """The first page of an OGG/Opus stream (identification header only): it looks like a
    voice note by its bytes but holds no audio (a damaged recording)."""
    head = b"OpusHead" + bytes([1, 1]) + (312).to_bytes(2, "little") + (48000).to_bytes(
        4, "little") + b"\x00\x00\x00"
    return (b"OggS\x00\x02" + b"\x00" * 8 + b"\x01\x00\x00\x00" + b"\x00" * 8
            + bytes([1, len(head)]) + head)


def ogg_voice(seconds: float = 1.5) -> bytes:
    """A real OGG/Opus voice note (a 440 Hz tone), as Telegram sends one."""
    return ogg_opus(seconds)
