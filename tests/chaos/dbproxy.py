"""A TCP proxy on 127.0.0.1 between the gateway replicas and PostgreSQL, to cut the
database off and bring it back without touching the server (which other work on the
machine shares: it is never restarted by the chaos suite).

`cut(seconds)` drops every open connection at once (the replicas see what a database
restart or a network failure looks like: connections reset mid-query) and refuses new ones
until it is over."""

from __future__ import annotations

import asyncio
import contextlib

__all__ = ["DbProxy"]


class DbProxy:
    def __init__(self, upstream_host: str = "127.0.0.1", upstream_port: int = 5432) -> None:
        self._up = (upstream_host, upstream_port)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._open = asyncio.Event()
        self._open.set()
        self.port = 0
        self.cuts = 0
        self.refused = 0

    async def start(self) -> DbProxy:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    def dsn(self, dsn: str) -> str:
        """`dsn` (a database on the upstream server) through this proxy."""
        head, _, rest = dsn.partition("@")
        _hostport, _, db = rest.partition("/")
        return f"{head}@127.0.0.1:{self.port}/{db}"

    async def cut(self, seconds: float) -> None:
        self.cuts += 1
        self._open.clear()
        for w in list(self._writers):
            with contextlib.suppress(Exception):
                w.transport.abort()
        await asyncio.sleep(seconds)
        self._open.set()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._writers):
            with contextlib.suppress(Exception):
                w.transport.abort()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _client(self, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        if not self._open.is_set():
            self.refused += 1
            writer.transport.abort()
            return
        try:
            up_r, up_w = await asyncio.open_connection(*self._up)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_w}
        pipes = [asyncio.create_task(_pipe(reader, up_w), name="dbproxy:up"),
                 asyncio.create_task(_pipe(up_r, writer), name="dbproxy:down")]
        self._tasks.update(pipes)
        try:
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for p in pipes:
                p.cancel()
            await asyncio.gather(*pipes, return_exceptions=True)
            self._tasks.difference_update(pipes)
            for w in (writer, up_w):
                self._writers.discard(w)
                with contextlib.suppress(Exception):
                    w.transport.abort()


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()
