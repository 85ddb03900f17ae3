"""Text out of inbound documents: PDF (`pypdf`), DOCX (`python-docx`), and plain text in any
of its forms (Markdown, source code, CSV, JSON). Blocking: run it in a thread.

Files are untrusted: a PDF is read page by page up to `MAX_PAGES`, a text file up to
`MAX_TEXT_BYTES`; a password-protected or damaged file raises `DocumentError` whose message
is safe to show to the user and the model."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAX_PAGES", "DocumentError", "Extracted", "cap", "extract", "extract_isolated"]

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


def _child_env() -> dict[str, str]:
    """The child's environment: enough to start Python, none of the gateway's secrets."""
    return {k: v for k, v in os.environ.items()
            if k in ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV")}


async def extract_isolated(path: Path, sniffed: str, *, timeout_s: float) -> Extracted | None:
    """`extract` for a PDF or DOCX in a child process with memory and CPU limits
    (`_child_main`, this file run as a script), killed after `timeout_s`; text files are read here, in a
    thread. Raises `DocumentError`."""
    if sniffed not in ("pdf", "zip"):
        return await asyncio.to_thread(extract, path, sniffed)
    # Run as a script, not `-m`: the child imports this file and pypdf/python-docx only,
    # never the gateway package (its start is then a fraction of the import time).
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-P", __file__, sniffed, str(path),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=_child_env())
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise DocumentError("reading it took too long") from None
    except asyncio.CancelledError:
        proc.kill()
        raise
    try:
        got = json.loads(out)
    except ValueError:
        raise DocumentError("the reader crashed on it (damaged or hostile file?)") from None
    if not isinstance(got, dict):
        raise DocumentError("the reader crashed on it (damaged or hostile file?)")
    if "error" in got:
        raise DocumentError(str(got["error"]))
    if got.get("none"):
        return None
    return Extracted(str(got["kind"]), str(got["text"]), pages=got.get("pages"),
                     pages_read=got.get("pages_read"))


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


def _child_main(argv: list[str]) -> int:
    """The child process that reads one untrusted PDF or DOCX: it limits its own memory and
    CPU time before parsing, prints one JSON object on stdout and exits: `{"text", "kind",
    "pages", "pages_read"}`, `{"error": reason}` or `{"none": true}` (no document we read).
    A parser that loops, explodes or crashes takes this process down, never the gateway."""
    import resource

    sniffed, path = argv[1], argv[2]
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_SECONDS, CHILD_CPU_SECONDS))
    try:
        got = extract(Path(path), sniffed)
    except DocumentError as exc:
        out: dict[str, object] = {"error": str(exc)}
    except MemoryError:
        out = {"error": "the document is too large to read"}
    else:
        out = ({"none": True} if got is None else
               {"text": got.text, "kind": got.kind, "pages": got.pages,
                "pages_read": got.pages_read})
    sys.stdout.write(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(_child_main(sys.argv))
