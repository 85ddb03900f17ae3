"""`platforms.discord`: the settings model of the Discord adapter (the one schema of its block).

Imports no SDK: `hermes config check` validates the block with this model.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from gateway.ports import TokenSettings

__all__ = ["DEFAULT_API_BASE_URL", "DiscordSettings"]

DEFAULT_API_BASE_URL = "https://discord.com/api/v10"


def _no_trailing_slash(url: str) -> str:
    return url.strip().rstrip("/") or DEFAULT_API_BASE_URL


class DiscordSettings(TokenSettings):
    """One Discord bot (`token`). discord.py owns the gateway session (heartbeats, RESUME)."""
    api_base_url: Annotated[str, AfterValidator(_no_trailing_slash)] = DEFAULT_API_BASE_URL
    """REST API base URL."""
    gateway_url: str | None = None
    """Gateway websocket URL; unset lets discord.py discover it."""
    liveness_window_s: float = Field(default=150.0, ge=0)
    """Seconds without a received frame before the adapter is restarted; keep it well above
    Discord's heartbeat interval (about 41 s). `0` = never."""
    guild_ready_timeout_s: float = Field(default=2.0, ge=0)
    """How long discord.py waits for more GUILD_CREATE events after READY before it reports
    ready."""
    request_timeout_s: float = Field(default=60.0, gt=0)
    """Bound of one send / edit, including discord.py's own rate-limit waits."""
    max_ratelimit_wait_s: float = Field(default=30.0, ge=30)
    """Longest rate-limit wait discord.py may do inside a request (it requires at least 30)."""
    reidentify_delay_s: float = Field(default=5.0, ge=0)
    """Pause before a new IDENTIFY after the session was invalidated, and between the
    IDENTIFYs of this process's shards (Discord allows one per 5 s)."""
    shards: int = Field(default=1, ge=1, le=1024)
    """Gateway shards (Discord requires one per 2,500 guilds; `GET /gateway/bot` recommends a
    count). Each shard is its own connection; with several replicas on PostgreSQL each shard
    is its own leader lease, so the shards spread over the replicas."""

