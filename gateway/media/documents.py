"""Text out of inbound documents: PDF (`pypdf`), DOCX (`python-docx`), and plain text in any
of its forms (Markdown, source code, CSV, JSON). Blocking: run it in a thread.

Files are untrusted: a PDF is read page by page up to `MAX_PAGES`, a text file up to
`MAX_TEXT_BYTES`; a password-protected or damaged file raises `DocumentError` whose message
is safe to show to the user and the model."""

from __future__ import annotations

import json
import logging
import os
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAX_PAGES", "DocumentError", "Extracted", "cap", "child_env", "extract"]

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


def child_env() -> dict[str, str]:
    """The child's environment: enough to start Python, none of the gateway's secrets."""
    return {k: v for k, v in os.environ.items()
            if k in ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV")}


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


#: The child's limits: address space and CPU seconds.
CHILD_MEMORY_BYTES = 1024 * 1024 * 1024
CHILD_CPU_SECONDS = 60


def _extract_one(sniffed: str, path: str) -> dict[str, object]:
    """What the child reports for one file: `{"text", "kind", "pages", "pages_read"}`,
    `{"error": reason}` or `{"none": true}` (no document we read)."""
    try:
        got = extract(Path(path), sniffed)
    except DocumentError as exc:
        return {"error": str(exc)}
    except MemoryError:
        return {"error": "the document is too large to read"}
    if got is None:
        return {"none": True}
    return {"text": got.text, "kind": got.kind, "pages": got.pages, "pages_read": got.pages_read}


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _serve() -> int:
    """The reader process (`documents.py --serve`, started by `gateway.media.isolation`):
    it imports the parsers once, then for each request line on stdin (`{"kind", "path"}`)
    forks a child that limits its own memory and CPU time, parses that one untrusted file
    and writes its report (`_extract_one`) into a pipe. On stdout, per request, three lines:
    `{"pid": N}`, the child's report (whatever it wrote before it ended: empty or cut when
    it crashed or was killed), `{"done": exit code}`. The reader itself never parses a
    file; a parser that loops, explodes or crashes takes one child down, never the reader
    or the gateway. Ends at the end of stdin."""
    import resource

    for module in ("pypdf", "pypdf._crypt_providers", "docx"):
        try:
            __import__(module)  # paid once here, not for every document
        except ImportError:
            pass
    for raw in sys.stdin.buffer:
        try:
            req = json.loads(raw)
            sniffed, path = str(req["kind"]), str(req["path"])
        except (ValueError, KeyError, TypeError):
            continue
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: one file, with limits, then gone
            try:
                os.close(r)
                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))
                resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_SECONDS, CHILD_CPU_SECONDS))
                _write_all(w, json.dumps(_extract_one(sniffed, path)).encode())
            finally:
                os._exit(0)
        os.close(w)
        _write_all(1, json.dumps({"pid": pid}).encode() + b"\n")
        chunks = []
        with os.fdopen(r, "rb") as report:
            while chunk := report.read(1 << 16):
                chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
        body = b"".join(chunks).replace(b"\n", b" ")
        _write_all(1, body + b"\n" + json.dumps(
            {"done": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(_serve())
