"""The dashboard's aiohttp server: routes, security headers, page rendering."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import jinja2
import structlog
from aiohttp import web

from gateway.dashboard.auth import Auth
from gateway.dashboard.chart import HEIGHT, WIDTH, usage_bars
from gateway.dashboard.errors import RecentErrors
from gateway.process import process_stats
from gateway.supervision_types import AdapterStatus
from gateway.usage_tally import TallySnapshot
from storage.ports import HistoryReader, LeaseStore, PairingStore, Reports
from storage.types import DayUsage, Session

__all__ = ["DashboardServer", "DashboardSources", "DashboardStore"]

log = structlog.get_logger("gateway.dashboard")
HERE = Path(__file__).parent
USAGE_DAYS = 14
PAGE = 50
#: Messages a session's page shows (the newest; the export has all).
TRANSCRIPT = 200
AGGREGATES_TTL_S = 10.0
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


class DashboardStore(HistoryReader, PairingStore, Reports, LeaseStore, Protocol):
    """What the dashboard reads from storage (and pairing approve/revoke writes)."""


@dataclass(slots=True)
class DashboardSources:
    """What the gateway hands the dashboard: its store and the views it already keeps."""

    store: DashboardStore
    adapters: Callable[[], list[AdapterStatus]]
    sessions: Callable[[], Awaitable[dict[str, Any]]]
    compression: Callable[[], dict[str, Any]]
    version: str = ""
    #: The replica set (`gateway.status.replicas_status`); None: a single gateway.
    replicas: Callable[[], Awaitable[dict[str, Any]]] | None = None
    #: The tokens this process stored since it started, per day (counters kept by the turn
    #: layer): the overview adds what they gained since its last read of the store.
    tally: Callable[[], TallySnapshot] = TallySnapshot


def _redirect(location: str) -> web.Response:
    return web.Response(status=303, headers={"Location": location})


def _when(ts: float | None) -> str:
    if not ts:
        return ""
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _plus(rows: list[DayUsage], gained: TallySnapshot) -> list[DayUsage]:
    """The stored usage per day plus the tokens the tally gained since it was read."""
    if not gained.days:
        return rows
    by_day = {r.day: r for r in rows}
    for day, (tin, tout) in gained.days.items():
        r = by_day.get(day) or DayUsage(day, 0, 0, 0)
        by_day[day] = dataclasses.replace(r, input_tokens=r.input_tokens + tin,
                                          output_tokens=r.output_tokens + tout)
    return [by_day[d] for d in sorted(by_day)]


def _size(n: int | None) -> str:
    if n is None:
        return "unknown"
    return f"{n / (1024 * 1024):.1f} MiB"


class DashboardServer:
    """`await start()` binds (`port` 0 picks a free one; read `url`); `await stop()`."""

    def __init__(self, sources: DashboardSources, *, host: str = "127.0.0.1", port: int = 8766,
                 token: str | None = None, errors: RecentErrors | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self._src = sources
        self._host, self._port = host, port
        self._auth = Auth(token)
        self._errors = errors if errors is not None else RecentErrors()
        self._clock = clock
        self._started = clock()
        self._runner: web.AppRunner | None = None
        # (when, since, the tally before the read, usage per day): the store's usage per day
        # (a sum over every session of 14 days), re-read every AGGREGATES_TTL_S; in between
        # the overview adds what the tally gained since the read, so the chart is current
        # after every turn with no such query per turn or per poll
        self._aggregates: tuple[float, float, TallySnapshot, list[DayUsage]] | None = None
        self.port = 0
        self._env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(HERE / "templates")),
            autoescape=True, trim_blocks=True, lstrip_blocks=True)
        self._env.filters["when"] = _when
        self._env.filters["size"] = _size

    @property
    def url(self) -> str:
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self.port}/"

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard], client_max_size=64 * 1024)
        r = app.router
        r.add_get("/", self._overview)
        r.add_get("/fragment/overview", self._overview_fragment)
        r.add_get("/sessions", self._sessions)
        r.add_get("/fragment/sessions", self._sessions_fragment)
        r.add_get("/sessions/{sid}", self._session)
        r.add_get("/sessions/{sid}/export", self._export)
        r.add_get("/pairing", self._pairing)
        r.add_post("/pairing/approve", self._approve)
        r.add_post("/pairing/revoke", self._revoke)
        r.add_get("/login", self._login_form)
        r.add_post("/login", self._login)
        r.add_post("/logout", self._logout)
        r.add_static("/static/", HERE / "static", show_index=False, follow_symlinks=False)
        return app

    async def start(self) -> None:
        self._errors.attach()
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        try:
            await site.start()
        except OSError:
            await self.stop()
            raise
        self.port = int(self._runner.addresses[0][1])
        log.info("dashboard_listening", host=self._host, port=self.port,
                 login=self._auth.needs_login)

    async def stop(self) -> None:
        self._errors.detach()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # -- guard ---------------------------------------------------------------------------------
    @web.middleware
    async def _guard(self, request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
                     ) -> web.StreamResponse:
        if not self._auth.host_ok(request):
            resp: web.StreamResponse = web.Response(status=421, text="misdirected request")
        elif request.path.startswith("/static/") or request.path == "/login":
            resp = await handler(request)
        elif self._auth.needs_login and self._auth.csrf_of(request) is None:
            if request.method == "GET" and not request.path.startswith("/fragment/"):
                resp = _redirect("/login")
            else:
                resp = web.Response(status=401, text="log in first")
        elif request.method == "POST" and not await self._csrf_ok(request):
            resp = web.Response(status=403, text="missing or wrong CSRF token; reload the page")
        else:
            try:
                resp = await handler(request)
            except web.HTTPException as exc:
                resp = web.Response(status=exc.status, text=exc.text or exc.reason)
        for k, v in (("Content-Security-Policy", CSP), ("X-Content-Type-Options", "nosniff"),
                     ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY"),
                     ("Cache-Control", "no-store")):
            resp.headers[k] = v
        return resp

    async def _csrf_ok(self, request: web.Request) -> bool:
        form = await request.post()
        return self._auth.csrf_ok(request, str(form.get("csrf", "")))

    # -- rendering -----------------------------------------------------------------------------
    async def _page(self, request: web.Request, name: str, status: int = 200,
                    **ctx: Any) -> web.Response:
        csrf = self._auth.csrf_of(request)
        resp = web.Response(status=status, content_type="text/html", charset="utf-8")
        if csrf is None and not self._auth.needs_login:
            csrf = self._auth.open_session(resp)
        resp.text = await self._render(name, csrf=csrf or "", login=self._auth.needs_login,
                                       path=request.path, **ctx)
        return resp

    async def _fragment(self, name: str, **ctx: Any) -> web.Response:
        return web.Response(text=await self._render(name, **ctx), content_type="text/html",
                            charset="utf-8")

    async def _render(self, name: str, **ctx: Any) -> str:
        """The template rendered in a worker thread (a transcript page is CPU work: it must
        not hold the event loop that runs the turns)."""
        return await asyncio.to_thread(self._env.get_template(name).render, **ctx)

    # -- overview ------------------------------------------------------------------------------
    async def overview_data(self) -> dict[str, Any]:
        """Everything the overview shows (also what the benchmark renders)."""
        store = self._src.store
        now = self._clock()
        today = dt.datetime.fromtimestamp(now, dt.UTC).date()
        since = dt.datetime.combine(today - dt.timedelta(days=USAGE_DAYS - 1), dt.time(),
                                    dt.UTC).timestamp()
        cached = self._aggregates
        if cached is None or now - cached[0] > AGGREGATES_TTL_S or cached[1] != since:
            mark = self._src.tally()
            cached = self._aggregates = (now, since, mark, await store.usage_by_day(since))
        _, _, mark, stored_usage = cached
        usage = _plus(stored_usage, self._src.tally().since(mark))
        total = await store.session_count()  # one COUNT(*): current on every page
        sessions = await self._src.sessions()
        comp = self._src.compression()
        raw = comp.get("running")
        running: list[dict[str, Any]] = raw if isinstance(raw, list) else []
        leases = [lease for lease in await asyncio.gather(
            *(store.current_lease(str(j["session_id"])) for j in running)) if lease]
        replicas = (await self._src.replicas() if self._src.replicas is not None
                    else {"enabled": False})
        return {
            "version": self._src.version, "uptime_s": int(now - self._started),
            "replicas": replicas,
            "process": process_stats(), "adapters": self._src.adapters(),
            "sessions": sessions, "total_sessions": total, "compression": comp,
            "jobs": running, "leases": leases, "now": now,
            "errors": self._errors.items()[:20],
            "bars": usage_bars(usage, USAGE_DAYS, today), "chart_w": WIDTH, "chart_h": HEIGHT,
            "usage_total": sum(u.input_tokens + u.output_tokens for u in usage),
        }

    async def _overview(self, request: web.Request) -> web.Response:
        return await self._page(request, "overview.html", **await self.overview_data())

    async def _overview_fragment(self, request: web.Request) -> web.Response:
        return await self._fragment("_overview.html", **await self.overview_data())

    # -- sessions ------------------------------------------------------------------------------
    async def _sessions_data(self, request: web.Request) -> dict[str, Any]:
        q = request.query.get("q", "").strip()[:200]
        store = self._src.store
        if q:
            return {"q": q, "hits": await store.search(q, limit=PAGE), "rows": []}
        return {"q": "", "hits": [], "rows": await store.list_sessions(limit=PAGE)}

    async def _sessions(self, request: web.Request) -> web.Response:
        return await self._page(request, "sessions.html", **await self._sessions_data(request))

    async def _sessions_fragment(self, request: web.Request) -> web.Response:
        return await self._fragment("_sessions.html", **await self._sessions_data(request))

    async def _find(self, request: web.Request) -> Session:
        s = await self._src.store.get_session(request.match_info["sid"][:200])
        if s is None:
            raise web.HTTPNotFound(text="no such session")
        return s

    async def _session(self, request: web.Request) -> web.Response:
        store = self._src.store
        s = await self._find(request)
        ancestors, children, (messages, total) = await asyncio.gather(
            store.ancestors(s.id), store.children(s.id), store.load_tail(s.id, TRANSCRIPT))
        return await self._page(request, "session.html", s=s, ancestors=ancestors,
                                children=children, messages=messages,
                                hidden=max(total - len(messages), 0))

    async def _export(self, request: web.Request) -> web.Response:
        s = await self._find(request)
        msgs = await self._src.store.load_all(s.id)
        body = "\n".join(json.dumps(m, ensure_ascii=False, default=str) for m in msgs) + "\n"
        safe = "".join(ch for ch in s.id if ch.isalnum() or ch in "_-")
        return web.Response(text=body, content_type="application/x-ndjson", charset="utf-8",
                            headers={"Content-Disposition":
                                     f'attachment; filename="{safe}.jsonl"'})

    # -- pairing -------------------------------------------------------------------------------
    async def _pairing(self, request: web.Request, note: str = "", status: int = 200,
                       ) -> web.Response:
        store = self._src.store
        pending, approved = await asyncio.gather(store.pending_pairing_codes(),
                                                 store.approved_users())
        return await self._page(request, "pairing.html", status=status, pending=pending,
                          approved=approved, note=note)

    async def _approve(self, request: web.Request) -> web.Response:
        form = await request.post()
        platform = str(form.get("platform", ""))[:64]
        code = str(form.get("code", "")).strip().upper()[:32]
        user = await self._src.store.approve_pairing_code(platform, code)
        if user is None:
            return await self._pairing(request, "No pending code like that (wrong, expired "
                                       "or used).", status=400)
        log.info("dashboard_pairing_approved", platform=platform)
        return await self._pairing(request, f"Approved {user.display or user.user_id} "
                                   f"on {platform}.")

    async def _revoke(self, request: web.Request) -> web.Response:
        form = await request.post()
        platform = str(form.get("platform", ""))[:64]
        user_id = str(form.get("user_id", ""))[:200]
        ok = await self._src.store.revoke_user(platform, user_id)
        if ok:
            log.info("dashboard_pairing_revoked", platform=platform)
        return await self._pairing(
            request, f"Revoked {user_id} on {platform}." if ok else "Not an approved user.",
            status=200 if ok else 400)

    # -- login ---------------------------------------------------------------------------------
    async def _login_form(self, request: web.Request) -> web.StreamResponse:
        if not self._auth.needs_login:
            return _redirect("/")
        return await self._page(request, "login.html")

    async def _login(self, request: web.Request) -> web.StreamResponse:
        if not self._auth.needs_login:
            return _redirect("/")
        form = await request.post()
        if not self._auth.token_ok(str(form.get("token", ""))):
            log.warning("dashboard_login_refused")
            return await self._page(request, "login.html", status=401, error=True)
        resp = _redirect("/")
        self._auth.open_session(resp)
        return resp

    async def _logout(self, request: web.Request) -> web.StreamResponse:
        resp = _redirect("/login" if self._auth.needs_login else "/")
        self._auth.close_session(request, resp)
        return resp
