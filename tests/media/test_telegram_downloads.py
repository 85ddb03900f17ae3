"""Telegram downloads under the gateway's limits (issue 18): a stalled download is cut off at
`gateway.media.download_timeout_s` with a note to the user and the model (the message still
goes), and a `file_path` that does not lead to the configured file server is never fetched
with the bot token: not an address on another host, not a local path."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from tests.fakes.openai_server import FakeOpenAIServer, text
from tests.multiuser.support import until
from tests.multiuser.telegram_harness import ADA, group_gateway


def _sent(model: FakeOpenAIServer) -> str:
    return str(model.requests[-1].body["messages"][-1]["content"])


@pytest.fixture
async def evil() -> AsyncIterator[list[str]]:
    """A server on another port that records every request (with its path and headers)."""
    seen: list[str] = []

    async def record(request: web.Request) -> web.Response:
        seen.append(f"{request.path_qs} {request.headers.get('Authorization')}")
        return web.Response(body=b"stolen")

    app = web.Application()
    app.router.add_get("/{tail:.*}", record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    seen.append(str(runner.addresses[0][1]))  # the port, first
    yield seen
    await runner.cleanup()


async def test_a_stalled_download_is_cut_off_with_a_note(tmp_path: Path,
                                                         model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model, gateway__media__download_timeout_s=0.5) as g:
        g.api.download_delay_s["slow.txt"] = 30.0
        model.enqueue(text("Got your caption."))
        await g.turn(g.ada_dm, ADA, "here it is", "Got your caption.",
                     document=("slow.txt", b"eventually"))
        assert "here it is" in _sent(model)
        assert ("[attachment slow.txt not downloaded: the download took longer than 0.5 s]"
                in _sent(model))
        await until(lambda: any(
            m.text == "⚠️ slow.txt was not downloaded: the download took longer than 0.5 s."
            for m in g.api.bot_messages(g.ada_dm)), "the note")


async def test_a_file_path_off_the_file_server_is_never_fetched(
        tmp_path: Path, model: FakeOpenAIServer, evil: list[str]) -> None:
    port = evil.pop(0)
    secret = tmp_path / "secret.env"
    secret.write_text("OPENAI_API_KEY=sk-do-not-read")
    async with group_gateway(tmp_path / "home", model) as g:
        # getFile names another host: python-telegram-bot joins it onto the configured file
        # server, so the request stays there (and finds nothing); the other host sees nothing.
        g.api.file_path_override["a.txt"] = f"http://127.0.0.1:{port}/steal/a.txt"
        model.enqueue(text("No file, then."))
        await g.turn(g.ada_dm, ADA, "first", "No file, then.", document=("a.txt", b"hello"))
        assert "[attachment a.txt not downloaded:" in _sent(model)

        # getFile names a local path (as a local Bot API server would): refused, not copied.
        g.api.file_path_override["b.txt"] = str(secret)
        model.enqueue(text("Still no file."))
        await g.turn(g.ada_dm, ADA, "second", "Still no file.", document=("b.txt", b"hello"))
        assert ("[attachment b.txt not downloaded: its address is not the configured file "
                "server's]") in _sent(model)
        assert "sk-do-not-read" not in str([r.body for r in model.requests])
        await until(lambda: any(m.text.startswith("⚠️ b.txt was not downloaded")
                                for m in g.api.bot_messages(g.ada_dm)), "the note")
    assert evil == []
    cached = [p.read_bytes() for p in (tmp_path / "home" / "cache").rglob("*") if p.is_file()]
    assert not any(b"sk-do-not-read" in c for c in cached)
