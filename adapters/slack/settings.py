"""Settings of the `slack` adapter, read from `platforms.slack` (a pydantic model or a dict)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["SlackSettings"]

DEFAULT_API_BASE_URL = "https://slack.com/api/"


def _secret(value: Any) -> str:
    if value is None:
        return ""
    getter = getattr(value, "get_secret_value", None)
    return str(getter() if callable(getter) else value).strip()


def _as_mapping(value: Any) -> Mapping[str, Any]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return value
    if hasattr(value, "model_dump"):
        return {k: getattr(value, k) for k in value.model_dump()}
    return vars(value)


def _base_url(url: str) -> str:
    url = (url or DEFAULT_API_BASE_URL).strip()
    return url if url.endswith("/") else url + "/"


@dataclass(frozen=True, slots=True)
class SlackSettings:
    """`platforms.slack`: tokens, transport mode and endpoints.

    `mode` is "socket" (Socket Mode, needs `app_token`) or "http" (Events API on
    `http_host:http_port` + `http_path`, needs `signing_secret`). `api_base_url` always ends with
    a slash (the SDK joins method names onto it). `ping_interval_s` is the Socket Mode
    ping/pong period; `timeout_s` bounds each Web API call.
    """

    bot_token: str = ""
    app_token: str = ""
    signing_secret: str = ""
    mode: Literal["socket", "http"] = "socket"
    api_base_url: str = DEFAULT_API_BASE_URL
    http_host: str = "127.0.0.1"
    http_port: int = 3000
    http_path: str = "/slack/events"
    ping_interval_s: float = 10.0
    timeout_s: float = 30.0
    connect_timeout_s: float = 30.0
    #: Seconds Socket Mode may stay disconnected before the adapter fails (0 = derived from
    #: the ping interval: max(20, 6 × ping_interval_s)).
    give_up_s: float = 0.0

    def __repr__(self) -> str:
        return (
            f"SlackSettings(mode={self.mode!r}, api_base_url={self.api_base_url!r}, "
            f"bot_token=<{'set' if self.bot_token else 'unset'}>, "
            f"app_token=<{'set' if self.app_token else 'unset'}>, "
            f"signing_secret=<{'set' if self.signing_secret else 'unset'}>)"
        )

    __str__ = __repr__

    @classmethod
    def from_any(cls, settings: Any) -> SlackSettings:
        """Build from a dict, the pydantic `SlackPlatform` model, a `SlackSettings` or None.

        Raises `ValueError` for an unknown mode or a non-numeric port.
        """
        if isinstance(settings, SlackSettings):
            return settings
        data = _as_mapping(settings)
        http = _as_mapping(data.get("http"))
        d = cls()
        mode = str(data.get("mode") or d.mode).strip().lower()
        if mode not in ("socket", "http"):
            raise ValueError(f"platforms.slack.mode must be 'socket' or 'http', not {mode!r}")
        return cls(
            bot_token=_secret(data.get("bot_token")),
            app_token=_secret(data.get("app_token")),
            signing_secret=_secret(data.get("signing_secret")),
            mode=mode,  # type: ignore[arg-type]
            api_base_url=_base_url(str(data.get("api_base_url") or "")),
            http_host=str(http.get("host") or data.get("http_host") or d.http_host),
            http_port=int(http.get("port", data.get("http_port", d.http_port))),
            http_path=str(http.get("path") or data.get("http_path") or d.http_path),
            ping_interval_s=float(data.get("ping_interval_s") or d.ping_interval_s),
            timeout_s=float(data.get("timeout_s") or d.timeout_s),
            connect_timeout_s=float(data.get("connect_timeout_s") or d.connect_timeout_s),
            give_up_s=float(data.get("give_up_s") or 0.0),
        )
