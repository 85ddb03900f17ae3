"""A local news page for the demo's `web_extract` step: an aiohttp site on 127.0.0.1 that the
demo's config allow-lists (`tools.web.allow_private`), so the step stays offline."""

from __future__ import annotations

from aiohttp import web

__all__ = ["NewsSite"]

PAGE = """<!doctype html><html><head><title>Harbour Gazette: today</title>
<script>window.analytics = "not part of the news";</script></head><body>
<nav><a href="/">Home</a> · <a href="/sport">Sport</a> · <a href="/weather">Weather</a></nav>
<article>
<h1>Today in the harbour town</h1>
<h2>Morning ferry moves to 07:45</h2>
<p>From Monday the first ferry leaves at 07:45 instead of 07:30, the harbour office said.</p>
<h2>Tram line 4 closed for repairs</h2>
<p>Replacement buses run every ten minutes until Friday.</p>
<h2>Library opens on Sundays</h2>
<p>The town library will open from 10:00 to 16:00 on Sundays, starting this week.</p>
</article>
<footer>© Harbour Gazette · <a href="/privacy">Privacy</a></footer>
</body></html>"""


class NewsSite:
    """`async with NewsSite() as s: s.url` → `http://127.0.0.1:<port>/today`."""

    def __init__(self) -> None:
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.requests = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/today"

    async def __aenter__(self) -> NewsSite:
        app = web.Application()
        app.router.add_get("/today", self._today)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _today(self, request: web.Request) -> web.Response:
        self.requests += 1
        return web.Response(text=PAGE, content_type="text/html")
