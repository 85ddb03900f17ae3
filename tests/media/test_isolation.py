"""The document reader process (`gateway.media.isolation`): PDFs and DOCX files are parsed in
a fresh child of one long-lived reader (the parsers are imported once), never in the gateway;
a child that hangs is killed at the timeout and the next document still reads; the reader
holds none of the gateway's secrets; it comes back when it was killed."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from gateway.media.documents import DocumentError
from gateway.media.isolation import IsolatedExtractor
from tests.media.files import docx_bytes, pdf


@pytest.fixture
async def reader():
    got = IsolatedExtractor()
    yield got
    await got.aclose()


def _reader_pid(reader: IsolatedExtractor) -> int:
    assert reader.pid is not None
    return reader.pid


async def test_documents_are_read_in_the_reader_and_its_children(
        tmp_path: Path, reader: IsolatedExtractor, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-of-the-gateway")
    a, b = tmp_path / "a.pdf", tmp_path / "b.docx"
    a.write_bytes(pdf(["First page.", "Second page."]))
    b.write_bytes(docx_bytes(["A paragraph."]))
    got = await reader.extract(a, "pdf", timeout_s=60)
    assert got is not None and got.pages == 2 and "Second page." in got.text
    pid = _reader_pid(reader)
    assert pid != os.getpid()
    environ = Path(f"/proc/{pid}/environ").read_bytes()
    assert b"sk-secret-of-the-gateway" not in environ and b"OPENAI_API_KEY" not in environ
    # Several at once: read one after the other by the same reader.
    both = await asyncio.gather(reader.extract(b, "zip", timeout_s=60),
                                reader.extract(a, "pdf", timeout_s=60))
    assert [g.kind for g in both if g is not None] == ["Word document", "PDF"]
    assert _reader_pid(reader) == pid


async def test_a_hanging_document_is_cut_off_and_the_next_one_reads(
        tmp_path: Path, reader: IsolatedExtractor) -> None:
    stuck = tmp_path / "stuck.pdf"
    os.mkfifo(stuck)  # opening it for reading blocks: a parser that never returns
    with pytest.raises(DocumentError, match="reading it took too long"):
        await reader.extract(stuck, "pdf", timeout_s=1.0)
    good = tmp_path / "good.pdf"
    good.write_bytes(pdf(["Still reading."]))
    got = await reader.extract(good, "pdf", timeout_s=60)
    assert got is not None and "Still reading." in got.text


async def test_a_killed_reader_is_started_again(tmp_path: Path,
                                                reader: IsolatedExtractor) -> None:
    doc = tmp_path / "d.pdf"
    doc.write_bytes(pdf(["Once."]))
    assert await reader.extract(doc, "pdf", timeout_s=60) is not None
    first = _reader_pid(reader)
    os.killpg(first, signal.SIGKILL)
    await asyncio.sleep(0.2)
    got = await reader.extract(doc, "pdf", timeout_s=60)
    assert got is not None and "Once." in got.text and _reader_pid(reader) != first
