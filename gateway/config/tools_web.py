"""`tools.web`: the web tools' settings (search backend, fetch limits, private-address allow-list).

Kept apart from `gateway.config.tools` so the toolset settings and these can grow separately.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from gateway.config.base import ConfigModel, OptSecret

__all__ = ["SearchBackend", "WebFetchConfig", "WebSearchConfig", "WebToolsConfig"]

SearchBackend = Literal["searxng", "brave", "tavily"]


def _opt_url(value: str | None) -> str | None:
    if value is None:
        return None
    if not value.startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL")
    return value.rstrip("/")


_HOST = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")


def _allow_entry(value: str) -> str:
    """A host name, an IP address or a CIDR block (checked here so a typo fails at start-up)."""
    text = value.strip().lower().rstrip(".")
    if not text:
        raise ValueError("empty entry")
    if "/" in text or text.replace(".", "").isdigit() or ":" in text:
        ipaddress.ip_network(text, strict=False)  # raises ValueError with a clear message
    elif not _HOST.fullmatch(text) or not all(0 < len(p) <= 63 for p in text.split(".")):
        raise ValueError(f"{value!r} is not a host name, address or CIDR block")
    return text


class WebSearchConfig(ConfigModel):
    """Where `web_search` asks. `searxng` needs `base_url` (a SearXNG instance that lists
    `json` in `search.formats`); `brave` and `tavily` need `api_key` (their public API is the
    default `base_url`). `web_search` is offered only when its backend is usable."""

    backend: SearchBackend = "searxng"
    base_url: Annotated[str | None, AfterValidator(_opt_url)] = None
    api_key: OptSecret = None
    timeout_s: float = Field(default=15.0, gt=0, le=120)
    retry_after_max_s: float = Field(default=5.0, ge=0, le=60)
    """A 429/503 with a `Retry-After` up to this many seconds is retried once after it."""


class WebFetchConfig(ConfigModel):
    """Limits of every page or image fetch (`web_extract`, `vision_analyze` by URL)."""

    timeout_s: float = Field(default=20.0, gt=0, le=300)
    max_bytes: int = Field(default=5_000_000, gt=0)
    max_redirects: int = Field(default=5, ge=0, le=20)
    max_chars: int = Field(default=20_000, ge=1_000)
    """Extracted text longer than this is condensed by the auxiliary model (or cut)."""
    condense: bool = True


class WebToolsConfig(ConfigModel):
    search: WebSearchConfig = Field(default_factory=WebSearchConfig)
    fetch: WebFetchConfig = Field(default_factory=WebFetchConfig)
    allow_private: list[Annotated[str, AfterValidator(_allow_entry)]] = Field(
        default_factory=list)
    """Hosts, addresses or CIDR blocks that fetches may reach although they are private,
    loopback or link-local (self-hosted services). Cloud metadata addresses stay refused."""
    image_max_bytes: int = Field(default=20_000_000, gt=0)
    """Largest image `vision_analyze` reads (before it is resized and re-encoded)."""
