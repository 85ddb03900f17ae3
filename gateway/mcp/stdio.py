"""A stdio transport for MCP servers that bounds what one message may cost in memory.

The SDK's `stdio_client` collects a line of the server's stdout however long it grows; a
server that prints an endless line would make the gateway hold all of it. This transport
reads bytes, and a message longer than `max_message_bytes` ends the connection instead
(`on_oversize` is told; the session sees the connection close, the call in flight fails, and
the server is restarted like after a crash). Everything else follows the SDK's transport:
newline-delimited JSON-RPC, the server in its own process group, and the SDK's own shutdown
sequence (stdin closed, a grace period, then the process tree killed), shielded and bounded.
POSIX only (the gateway's platforms).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TextIO

import anyio
import anyio.lowlevel
import mcp_types as mt
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.shared.message import SessionMessage

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "bounded_stdio"]

#: Longest single message (one line) a server may send: 16 MiB.
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_FLUSH_S = 0.5


class _TooLong(Exception):
    """A message longer than the limit."""


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mt.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


@contextlib.asynccontextmanager
async def bounded_stdio(
    params: StdioServerParameters,
    *,
    errlog: TextIO,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    on_oversize: Callable[[int], None] | None = None,
) -> AsyncIterator[tuple[anyio.abc.ObjectReceiveStream[SessionMessage | Exception],
                         anyio.abc.ObjectSendStream[SessionMessage]]]:
    """Start the server of `params` and yield the SDK's pair of message streams. Raises
    `OSError` when the command cannot be started."""
    from mcp.client.stdio import _stop_server_process  # the SDK's shutdown sequence

    cwd: Path | str | None = params.cwd
    process = await anyio.open_process(
        [params.command, *params.args], env=get_default_environment() | (params.env or {}),
        stderr=errlog, cwd=cwd, start_new_session=True)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout is not None
        try:
            async with read_writer:
                try:
                    await _pump(process.stdout, read_writer)
                except _TooLong:  # told before the stream closes, so the caller knows why
                    if on_oversize is not None:
                        on_oversize(max_message_bytes)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream,
                ConnectionError):
            pass

    async def _pump(stdout: anyio.abc.ByteReceiveStream,
                    out: anyio.abc.ObjectSendStream[SessionMessage | Exception]) -> None:
        buffer = bytearray()
        async for chunk in stdout:
            start = 0
            while (end := chunk.find(b"\n", start)) != -1:
                if len(buffer) + end - start > max_message_bytes:
                    raise _TooLong
                buffer += chunk[start:end]
                start = end + 1
                if buffer.strip():
                    await out.send(_parse(bytes(buffer)))
                buffer.clear()
            buffer += chunk[start:]
            if len(buffer) > max_message_bytes:
                raise _TooLong

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()
        finally:
            writer_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(_FLUSH_S):
                    await writer_done.wait()
                await _stop_server_process(process)
                for stream in (read_stream, write_stream, read_writer, write_reader):
                    await stream.aclose()
                await anyio.lowlevel.checkpoint()
            tg.cancel_scope.cancel()
