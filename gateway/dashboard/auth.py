"""Who may use the dashboard, and CSRF protection of its forms.

With a token: a login form; the token is compared in constant time, and a good one opens a
browser session (a random id in an HttpOnly, SameSite=Strict cookie, kept in memory only).
Without a token (allowed on a loopback address only): every visitor gets such a session, and
requests must name a loopback host (no DNS rebinding from a web page). Every POST carries the
session's CSRF token in a form field; a request without the right one is refused (403).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections import OrderedDict

from aiohttp import web

__all__ = ["COOKIE", "Auth"]

COOKIE = "hermes_dash"
MAX_SESSIONS = 64


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode()).digest()


def _loopback_host(host_header: str) -> bool:
    host = host_header.rsplit(":", 1)[0] if not host_header.startswith("[") else \
        host_header[1:].split("]", 1)[0]
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Auth:
    def __init__(self, token: str | None) -> None:
        self._token = _digest(token) if token else None
        self._sessions: OrderedDict[str, str] = OrderedDict()  # session id → csrf token

    @property
    def needs_login(self) -> bool:
        return self._token is not None

    def token_ok(self, given: str) -> bool:
        """Constant-time comparison of a submitted token with the configured one."""
        return self._token is not None and hmac.compare_digest(_digest(given), self._token)

    def open_session(self, response: web.StreamResponse, secure: bool = False) -> str:
        sid, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self._sessions[sid] = csrf
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        response.set_cookie(COOKIE, sid, httponly=True, samesite="Strict", path="/",
                            secure=secure)
        return csrf

    def close_session(self, request: web.Request, response: web.StreamResponse) -> None:
        self._sessions.pop(request.cookies.get(COOKIE, ""), None)
        response.del_cookie(COOKIE, path="/")

    def csrf_of(self, request: web.Request) -> str | None:
        """The CSRF token of the request's session, or None when it has none."""
        sid = request.cookies.get(COOKIE)
        return self._sessions.get(sid) if sid else None

    def host_ok(self, request: web.Request) -> bool:
        """Without a token, only requests addressed to a loopback name are served."""
        return self._token is not None or _loopback_host(request.host or "")

    def csrf_ok(self, request: web.Request, submitted: str) -> bool:
        expected = self.csrf_of(request)
        return expected is not None and hmac.compare_digest(
            submitted.encode(), expected.encode())
