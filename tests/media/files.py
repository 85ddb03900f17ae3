"""Small real files made in the test: images, documents, audio."""

from __future__ import annotations

import io

from PIL import Image


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
