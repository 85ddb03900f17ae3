"""`CliAdapter`: the terminal chat as a platform. See `hermes_common.chatwire`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapters.cli.settings import CliSettings
from gateway.events import ChatType, MessageEvent, OutboundMessage, SendResult, UserRef
from gateway.ports import (
    AdapterContext,
    AdapterFatalError,
    BasePlatformAdapter,
    BudgetSpec,
    Capabilities,
    RateProfile,
)
from hermes_common.chatwire import MAX_LINE, decode, encode

__all__ = ["CliAdapter"]

_NAME_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def _user_name(raw: object) -> str:
    name = "".join(ch for ch in str(raw or "")[:64] if ch in _NAME_OK)
    return name or "operator"


class CliAdapter(BasePlatformAdapter):
    """Serves `hermes chat` clients on a Unix socket (mode 0600) in the profile folder."""

    settings: CliSettings

    def __init__(self, name: str = "cli",
                 settings: CliSettings | Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.settings = CliSettings.coerce(settings)
        self.capabilities = Capabilities(
            edit=True, typing=False, media=False, delete=False, max_length=100_000,
            dialect="markdown", rate_profile=RateProfile(per_chat=BudgetSpec(())),
            trusted_auth=True, push=True, operator=True,
            reply_anywhere=False)
        self.format_hint = "Replies show in a terminal that renders Markdown."
        self._server: asyncio.AbstractServer | None = None
        self._clients: dict[str, set[asyncio.StreamWriter]] = {}
        self._ctx: AdapterContext | None = None
        self.path: Path | None = None

    def _socket_path(self, ctx: AdapterContext) -> Path:
        if self.settings.socket_path:
            return Path(self.settings.socket_path).expanduser()
        return ctx.cache_dir.parent / "run" / "cli.sock"

    async def start(self, ctx: AdapterContext) -> None:
        self._ctx = ctx
        path = self.path = self._socket_path(ctx)
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a stale socket: one gateway per profile holds the instance lock
        old = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(self._serve, path=str(path),
                                                           limit=MAX_LINE)
        except OSError as exc:
            raise AdapterFatalError(f"cannot listen on {path}: {exc.strerror}") from exc
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        ctx.connected()
        ctx.logger.info("cli_listening", path=str(path))
        try:
            await ctx.stop_event.wait()
        finally:
            await self.stop()

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for writers in list(self._clients.values()):
            for w in list(writers):
                w.close()
        self._clients.clear()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2.0)
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        chat: str | None = None
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                frame = decode(line)
                if frame is None:
                    continue
                if frame.get("t") == "hello" and chat is None:
                    chat = _user_name(frame.get("user"))
                    self._clients.setdefault(chat, set()).add(writer)
                    writer.write(encode({"t": "ready", "chat": chat}))
                    await writer.drain()
                elif frame.get("t") == "message" and chat is not None:
                    await self._emit(chat, str(frame.get("id") or uuid.uuid4().hex),
                                     str(frame.get("text") or ""))
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            return
        finally:
            if chat is not None:
                self._clients.get(chat, set()).discard(writer)
            writer.close()

    async def _emit(self, chat: str, mid: str, text: str) -> None:
        ctx = self._ctx
        if ctx is None or not text.strip():
            return
        ctx.progress()
        ev = MessageEvent(platform=self.name, event_id=f"{chat}:{mid}", chat_id=chat,
                          chat_type=ChatType.DM, user=UserRef(id=chat, name=chat),
                          text=text, message_id=mid)
        await ctx.emit(ev)

    async def _write(self, chat: str, frame: dict[str, Any]) -> bool:
        writers = list(self._clients.get(chat, ()))
        data = encode(frame)
        for w in writers:
            try:
                w.write(data)
                await w.drain()
            except (ConnectionError, RuntimeError):
                self._clients.get(chat, set()).discard(w)
        return bool(writers)

    async def send(self, message: OutboundMessage) -> SendResult:
        mid = uuid.uuid4().hex[:12]
        await self._write(message.chat_id, {"t": "send", "id": mid, "text": message.text,
                                            "reply_to": message.reply_to})
        return SendResult.success(mid)  # nobody listening: the reply is stored all the same

    async def edit(self, chat_id: str, message_id: str, text: str, *,
                   formatted: bool = True) -> SendResult:
        await self._write(chat_id, {"t": "edit", "id": message_id, "text": text})
        return SendResult.success(message_id)

    async def turn_complete(self, chat_id: str, *, reply_to: str | None, ok: bool,
                            error: str | None = None) -> None:
        with contextlib.suppress(Exception):
            await self._write(chat_id, {"t": "done", "reply_to": reply_to, "ok": ok,
                                        "error": error})
