"""Text out of inbound documents: PDF (`pypdf`), DOCX (`python-docx`), and plain text in any
of its forms (Markdown, source code, CSV, JSON). Blocking: run it in a thread.

Files are untrusted: a PDF is read page by page up to `MAX_PAGES`, a text file up to
`MAX_TEXT_BYTES`; a password-protected or damaged file raises `DocumentError` whose message
is safe to show to the user and the model."""

from __future__ import annotations

import logging
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAX_PAGES", "DocumentError", "Extracted", "cap", "extract"]

MAX_PAGES = 300
MAX_TEXT_BYTES = 8_000_000

# pypdf reports recoverable oddities of a damaged file as log warnings: not ours to log.
logging.getLogger("pypdf").setLevel(logging.ERROR)


class DocumentError(ValueError):
    """The document could not be read; the message says why, in a few words."""


@dataclass(frozen=True, slots=True)
class Extracted:
    kind: str  # "PDF", "Word document", "text file"
    text: str
    pages: int | None = None
    pages_read: int | None = None


def extract(path: Path, sniffed: str) -> Extracted | None:
    """The text of the file at `path` (`sniffed` as by `gateway.media.sniff`); None when the
    file is no document we read (an unknown zip, binary data)."""
    if sniffed == "pdf":
        return _pdf(path)
    if sniffed == "zip":
        return _docx(path)
    if sniffed == "text":
        with open(path, "rb") as fh:
            raw = fh.read(MAX_TEXT_BYTES)
        return Extracted("text file", raw.decode("utf-8", errors="replace").lstrip("\ufeff"))
    return None


def _pdf(path: Path) -> Extracted:
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PdfReadError, PyPdfError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError("the PDF is password-protected")
        total = len(reader.pages)
        texts = []
        for number, page in enumerate(reader.pages[:MAX_PAGES], 1):
            texts.append(f"[page {number}]\n{(page.extract_text() or '').strip()}")
    except DocumentError:
        raise
    except FileNotDecryptedError:
        raise DocumentError("the PDF is password-protected") from None
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, OSError,
            RecursionError, AssertionError):
        raise DocumentError("the PDF is damaged or not a PDF") from None
    body = "\n\n".join(texts)
    if not body.replace("[page", "").strip(" \n]0123456789"):
        raise DocumentError("the PDF has no text layer (a scan?)")
    return Extracted("PDF", body, pages=total, pages_read=min(total, MAX_PAGES))


def _docx(path: Path) -> Extracted | None:
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
            if "word/document.xml" not in names:
                return None
            if "EncryptedPackage" in names:
                raise DocumentError("the document is password-protected")
    except zipfile.BadZipFile:
        raise DocumentError("the file is damaged (not a valid zip/DOCX)") from None
    import docx

    try:
        doc = docx.Document(str(path))
    except Exception:  # noqa: BLE001 - python-docx raises many kinds for a bad file
        raise DocumentError("the Word document is damaged") from None
    lines = [p.text for p in doc.paragraphs]
    for table in doc.tables:
        for row in table.rows:
            lines.append(" | ".join(cell.text.strip() for cell in row.cells))
    return Extracted("Word document", "\n".join(lines).strip())


def cap(text: str, limit: int) -> tuple[str, int]:
    """`text` cut to about `limit` characters, keeping the head (two thirds) and the tail
    (one third) with a note of what was cut between them; and the number of characters cut."""
    if len(text) <= limit:
        return text, 0
    head, tail = limit * 2 // 3, limit // 3
    cut = len(text) - head - tail
    return (f"{text[:head]}\n[… {cut} characters cut here …]\n{text[len(text) - tail:]}", cut)
