"""Reading a child's output with caps: what is kept for the model and when to stop."""

from __future__ import annotations

import asyncio

__all__ = ["OutputCapture", "read_capped"]


class OutputCapture:
    """Keeps the head (40 %) and a rolling tail of a stream, counting every byte."""

    def __init__(self, max_bytes: int) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self._head_cap = int(max_bytes * 0.4)
        self._tail_cap = max_bytes - self._head_cap

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self._tail_cap:
                del self.tail[: len(self.tail) - self._tail_cap]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        if not self.truncated:
            return head + tail
        cut = self.total - len(self.head) - len(self.tail)
        return f"{head}\n[... {cut:,} bytes of output omitted ...]\n{tail}"


async def read_capped(stream: asyncio.StreamReader, out: OutputCapture, limit: int) -> bool:
    """Read until EOF; False when the output passed `limit` (the caller kills the script)."""
    while chunk := await stream.read(65536):
        out.add(chunk)
        if out.total > limit:
            return False
    return True
