"""Where a platform credential may be sent: a host allow-list checked on the parsed URL.

A bot token travels with some downloads (Slack's `url_private` files need the bot token). The
URL comes from a payload, so it is parsed the way the HTTP client parses it (`yarl`, which
aiohttp uses) and checked by hostname: userinfo (`https://files.slack.com:x@evil.example/`),
backslashes, other ports, letters from other scripts and trailing dots cannot smuggle the
credential to another host.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from yarl import URL

__all__ = ["HostAllowList"]

_DEFAULT_PORTS = {"https": 443, "http": 80}


def _norm(host: str) -> str:
    return host.rstrip(".").lower()


@dataclass(frozen=True, slots=True)
class HostAllowList:
    """`domains`: names whose host and subdomains are allowed over https on the default port
    (e.g. "slack.com"). `origins`: exact base URLs also allowed (scheme, host and port as
    written, e.g. a configured `api_base_url`; how tests point the SDKs at local fakes)."""

    domains: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()

    @classmethod
    def of(cls, *, domains: Iterable[str] = (), origins: Iterable[str] = ()) -> HostAllowList:
        return cls(tuple(_norm(d) for d in domains), tuple(origins))

    def parse(self, url: str) -> URL | None:
        """The parsed URL when a credential may be sent to it, else None. Must not raise."""
        try:
            parsed = URL(url)
        except (ValueError, TypeError):
            return None
        if self.allows(parsed):
            return parsed
        return None

    def allows(self, url: URL) -> bool:
        """Must not raise."""
        host = url.raw_host
        if not url.is_absolute() or not host or url.user is not None or url.password is not None:
            return False
        if not host.isascii():  # IDN: compare the ASCII form only (yarl encodes it)
            return False
        name = _norm(host)
        scheme = url.scheme.lower()
        for origin in self.origins:
            try:
                base = URL(origin)
            except ValueError:
                continue
            if (scheme == base.scheme.lower() and name == _norm(base.raw_host or "")
                    and url.port == base.port):
                return True
        if scheme != "https" or url.port != _DEFAULT_PORTS["https"]:
            return False
        return any(name == d or name.endswith("." + d) for d in self.domains)
