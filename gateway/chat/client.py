"""A connection to the cli adapter's socket, and one turn over it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_common.chatwire import MAX_LINE, decode, encode

__all__ = ["ChatConnection", "TurnResult", "connect"]


@dataclass(slots=True)
class TurnResult:
    """What the gateway showed for one message: its messages in order (id → latest text)."""

    ok: bool = True
    error: str | None = None
    messages: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False

    @property
    def text(self) -> str:
        return "\n\n".join(t for t in self.messages.values() if t.strip())


class ChatConnection:
    """One client of the cli adapter (`hermes_common.chatwire`)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 chat: str) -> None:
        self._reader = reader
        self._writer = writer
        self.chat = chat

    async def send(self, text: str) -> str:
        mid = uuid.uuid4().hex[:16]
        self._writer.write(encode({"t": "message", "id": mid, "text": text}))
        await self._writer.drain()
        return mid

    async def frame(self) -> dict[str, Any]:
        line = await self._reader.readline()
        if not line:
            raise ConnectionError("the gateway closed the chat connection")
        return decode(line) or {}

    async def close(self) -> None:
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (ConnectionError, OSError):
            pass

    async def turn(self, text: str, on_update: Callable[[TurnResult], None] | None = None,
                   interrupt: asyncio.Event | None = None,
                   timeout_s: float = 900.0) -> TurnResult:
        """Send `text` and collect what comes back until the gateway says it answered it.
        Setting `interrupt` sends `/stop` once (the turn ends interrupted)."""
        mid = await self.send(text)
        out = TurnResult()
        stop_sent = False
        async with asyncio.timeout(timeout_s):
            while True:
                nxt = asyncio.ensure_future(self.frame())
                waits: set[asyncio.Future[Any]] = {nxt}
                stopper: asyncio.Future[Any] | None = None
                if interrupt is not None and not stop_sent:
                    stopper = asyncio.ensure_future(interrupt.wait())
                    waits.add(stopper)
                done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if stopper is not None and stopper in done and not stop_sent:
                    stop_sent = True
                    out.interrupted = True
                    await self.send("/stop")
                if stopper is not None and not stopper.done():
                    stopper.cancel()
                frame = await nxt
                kind = frame.get("t")
                if kind in ("send", "edit"):
                    fid = str(frame.get("id"))
                    if kind == "send" or fid in out.messages:
                        out.messages[fid] = str(frame.get("text") or "")
                        if on_update is not None:
                            on_update(out)
                elif kind == "done" and frame.get("reply_to") == mid:
                    out.ok = bool(frame.get("ok"))
                    out.error = frame.get("error")
                    return out


async def connect(path: Path, user: str, timeout_s: float = 5.0) -> ChatConnection:
    """Connect and say hello. Raises OSError when nothing listens at `path`."""
    reader, writer = await asyncio.wait_for(
        asyncio.open_unix_connection(str(path), limit=MAX_LINE), timeout_s)
    writer.write(encode({"t": "hello", "user": user}))
    await writer.drain()
    line = await asyncio.wait_for(reader.readline(), timeout_s)
    frame = decode(line) or {}
    if frame.get("t") != "ready":
        writer.close()
        raise ConnectionRefusedError("the socket did not answer as a hermes chat server")
    return ChatConnection(reader, writer, str(frame.get("chat")))
