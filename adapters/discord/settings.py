"""Settings of the Discord adapter, read from `platforms.discord` (a pydantic model or a dict)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_API_BASE_URL", "DiscordSettings"]

DEFAULT_API_BASE_URL = "https://discord.com/api/v10"


def _secret(value: Any) -> str:
    getter = getattr(value, "get_secret_value", None)
    return str(getter() if callable(getter) else value or "").strip()


def _as_mapping(settings: Any) -> Mapping[str, Any]:
    if settings is None:
        return {}
    if isinstance(settings, Mapping):
        return settings
    if hasattr(settings, "model_dump"):
        return {k: getattr(settings, k) for k in settings.model_dump()}
    return vars(settings)


@dataclass(frozen=True, slots=True)
class DiscordSettings:
    """`platforms.discord`: {token, api_base_url, gateway_url} plus a few optional knobs.

    `gateway_url` None lets discord.py use its default gateway. `liveness_window_s` must stay
    well above Discord's heartbeat interval (about 41 s): a healthy connection receives a
    heartbeat ACK at least that often. `guild_ready_timeout_s` is how long discord.py waits for
    more GUILD_CREATE events after READY before it reports ready. `request_timeout_s` bounds one
    send / edit including discord.py's own rate-limit waits (at most `max_ratelimit_wait_s`,
    which discord.py requires to be at least 30 s). `reidentify_delay_s` is the pause before a
    new IDENTIFY after a session was invalidated (Discord allows one per 5 s).
    """

    token: str = ""
    api_base_url: str = DEFAULT_API_BASE_URL
    gateway_url: str | None = None
    liveness_window_s: float = 150.0
    guild_ready_timeout_s: float = 2.0
    request_timeout_s: float = 60.0
    max_ratelimit_wait_s: float = 30.0
    reidentify_delay_s: float = 5.0

    def __repr__(self) -> str:
        return (
            f"DiscordSettings(token=<redacted>, api_base_url={self.api_base_url!r}, "
            f"gateway_url={self.gateway_url!r})"
        )

    __str__ = __repr__

    @classmethod
    def from_any(cls, settings: Any) -> DiscordSettings:
        """Build from a dict, a pydantic model, a `DiscordSettings` or None.

        Raises `ValueError` for values of the wrong type.
        """
        if isinstance(settings, DiscordSettings):
            return settings
        data = _as_mapping(settings)
        d = cls()
        gateway_url = data.get("gateway_url")
        return cls(
            token=_secret(data.get("token")),
            api_base_url=str(data.get("api_base_url") or d.api_base_url).rstrip("/"),
            gateway_url=str(gateway_url) if gateway_url else None,
            liveness_window_s=float(data.get("liveness_window_s") or d.liveness_window_s),
            guild_ready_timeout_s=float(
                data.get("guild_ready_timeout_s") or d.guild_ready_timeout_s
            ),
            request_timeout_s=float(data.get("request_timeout_s") or d.request_timeout_s),
            reidentify_delay_s=float(data.get("reidentify_delay_s", d.reidentify_delay_s)),
            max_ratelimit_wait_s=max(
                30.0, float(data.get("max_ratelimit_wait_s") or d.max_ratelimit_wait_s)
            ),
        )
