"""`IsolatedExtractor`: PDF and DOCX text from a child process, never from the gateway's own.

One reader process (`gateway/media/documents.py --serve`, run as a script: it imports that
file and the parsers only, never the gateway, and gets no secrets in its environment) is
started on first use and kept. It imports pypdf and python-docx once (about 0.7 s of CPU,
more on a busy machine: what every document paid when each had a fresh interpreter) and
forks one child per document, which limits its own memory and CPU time before it parses.
Documents are read one at a time; a child that runs past the timeout is killed and the
reader started again. Text files are read in a thread here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path

import structlog

from gateway.media import documents
from gateway.media.documents import DocumentError, Extracted, child_env, extract

__all__ = ["IsolatedExtractor"]

log = structlog.get_logger("gateway.media.documents")

#: Longest line read from the reader: the text of one document (MAX_PAGES pages).
_LINE_LIMIT = 256 * 1024 * 1024
_CRASHED = "the reader crashed on it (damaged or hostile file?)"


class IsolatedExtractor:
    """Owns the reader process: close with `aclose()` (it also ends when the gateway's
    process does: its stdin closes)."""

    def __init__(self) -> None:
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    @property
    def pid(self) -> int | None:
        """The reader process's id while it runs (None before the first document)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.returncode is None else None

    async def extract(self, path: Path, sniffed: str, *, timeout_s: float) -> Extracted | None:
        """The text of the file (`sniffed` as by `gateway.media.sniff`), None when it is no
        document we read. Raises `DocumentError` with a reason safe to show."""
        if sniffed not in ("pdf", "zip"):
            return await asyncio.to_thread(extract, path, sniffed)
        async with self._lock:
            report = await self._ask(path, sniffed, timeout_s)
        return _parse(report)

    async def aclose(self) -> None:
        """Stop the reader process. Must not raise."""
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(Exception):
            assert proc.stdin is not None
            proc.stdin.close()
            await asyncio.wait_for(proc.wait(), 2.0)
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(Exception):
                await proc.wait()

    async def _started(self) -> asyncio.subprocess.Process:
        if self._proc is None or self._proc.returncode is not None:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable, "-P", documents.__file__, "--serve",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL, env=child_env(), limit=_LINE_LIMIT,
                start_new_session=True)  # its own process group: killed with its children
            log.info("document_reader_started", pid=self._proc.pid)
        return self._proc

    async def _ask(self, path: Path, sniffed: str, timeout_s: float) -> bytes:
        request = json.dumps({"kind": sniffed, "path": str(path)}).encode() + b"\n"
        try:
            async with asyncio.timeout(timeout_s):
                for attempt in (1, 2):
                    proc = await self._started()
                    assert proc.stdin is not None and proc.stdout is not None
                    try:
                        proc.stdin.write(request)
                        await proc.stdin.drain()
                        accepted = await proc.stdout.readline()  # {"pid": the child's}
                    except OSError:
                        accepted = b""
                    if accepted.endswith(b"\n"):
                        break
                    # The reader had ended since the last document: start it again, once.
                    await self._kill()
                    if attempt == 2:
                        raise DocumentError(_CRASHED)
                assert proc.stdout is not None
                report = await proc.stdout.readline()
                done = await proc.stdout.readline()  # {"done": its exit code}
                if not done.endswith(b"\n"):
                    raise DocumentError(_CRASHED)
            return report
        except TimeoutError:
            await self._kill()
            raise DocumentError("reading it took too long") from None
        except DocumentError:
            await self._kill()
            raise
        except (OSError, ValueError):
            await self._kill()
            raise DocumentError(_CRASHED) from None
        except asyncio.CancelledError:
            await asyncio.shield(self._kill())
            raise

    async def _kill(self) -> None:
        """Kill the reader and the document's child (its process group); the next document
        starts a new reader."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            await proc.wait()


def _parse(report: bytes) -> Extracted | None:
    try:
        got = json.loads(report)
    except ValueError:
        raise DocumentError(_CRASHED) from None
    if not isinstance(got, dict):
        raise DocumentError(_CRASHED)
    if "error" in got:
        raise DocumentError(str(got["error"]))
    if got.get("none"):
        return None
    return Extracted(str(got["kind"]), str(got["text"]), pages=got.get("pages"),
                     pages_read=got.get("pages_read"))
