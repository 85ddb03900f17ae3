"""Settings of the Telegram adapter, read from `platforms.telegram` (a pydantic model or a dict)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["TelegramSettings", "WebhookSettings"]


def _secret(value: Any) -> str:
    if value is None:
        return ""
    getter = getattr(value, "get_secret_value", None)
    return str(getter() if callable(getter) else value).strip()


def _mapping(value: Any) -> Mapping[str, Any]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return value
    if hasattr(value, "model_dump"):
        return {k: getattr(value, k) for k in type(value).model_fields}
    return vars(value)


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    host: str = "127.0.0.1"
    port: int = 8443
    path: str = "/telegram/webhook"
    url: str = ""
    secret_token: str = ""

    def __repr__(self) -> str:
        return (f"WebhookSettings(host={self.host!r}, port={self.port}, path={self.path!r}, "
                f"url={self.url!r}, secret_token=<redacted>)")


@dataclass(frozen=True, slots=True)
class TelegramSettings:
    """`platforms.telegram` (DESIGN.md §5) plus a few tuning knobs with safe defaults.

    `base_url` / `base_file_url` get the token appended, as on the real Bot API.
    `conflict_retries` consecutive 409 Conflicts (another poller on this token) make `start()`
    raise; `conflict_backoff_s` is the first wait (doubled each time, capped at 30 s).
    `max_download_bytes` caps inbound files (the hosted Bot API serves up to 20 MB).
    """

    token: str = ""
    base_url: str = "https://api.telegram.org/bot"
    base_file_url: str = "https://api.telegram.org/file/bot"
    mode: Literal["polling", "webhook"] = "polling"
    poll_timeout_s: float = 30.0
    webhook: WebhookSettings = WebhookSettings()
    conflict_retries: int = 5
    conflict_backoff_s: float = 2.0
    network_retries: int = 5
    network_backoff_s: float = 1.0
    max_download_bytes: int = 20 * 1024 * 1024
    request_timeout_s: float = 20.0

    def __repr__(self) -> str:
        return (f"TelegramSettings(token=<redacted>, base_url={self.base_url!r}, "
                f"mode={self.mode!r}, poll_timeout_s={self.poll_timeout_s}, "
                f"webhook={self.webhook!r})")

    __str__ = __repr__

    @classmethod
    def from_any(cls, settings: Any) -> TelegramSettings:
        """Build from a dict, a pydantic model, a `TelegramSettings` or None.

        Raises `ValueError` for values of the wrong type or an unknown mode.
        """
        if isinstance(settings, TelegramSettings):
            return settings
        data = _mapping(settings)
        d = cls()
        wh = _mapping(data.get("webhook"))
        dw = WebhookSettings()
        mode = str(data.get("mode") or d.mode)
        if mode not in ("polling", "webhook"):
            raise ValueError(f"platforms.telegram.mode must be polling or webhook, not {mode!r}")

        def num(key: str, default: float) -> float:
            value = data.get(key)
            return float(default if value is None else value)

        return cls(
            token=_secret(data.get("token")),
            base_url=str(data.get("base_url") or d.base_url),
            base_file_url=str(data.get("base_file_url") or d.base_file_url),
            mode=mode,  # type: ignore[arg-type]
            poll_timeout_s=num("poll_timeout_s", d.poll_timeout_s),
            webhook=WebhookSettings(
                host=str(wh.get("host") or dw.host),
                port=int(dw.port if wh.get("port") is None else wh["port"]),
                path="/" + str(wh.get("path") or dw.path).lstrip("/"),
                url=str(wh.get("url") or ""),
                secret_token=_secret(wh.get("secret_token")),
            ),
            conflict_retries=max(1, int(num("conflict_retries", d.conflict_retries))),
            conflict_backoff_s=num("conflict_backoff_s", d.conflict_backoff_s),
            network_retries=max(1, int(num("network_retries", d.network_retries))),
            network_backoff_s=num("network_backoff_s", d.network_backoff_s),
            max_download_bytes=int(num("max_download_bytes", d.max_download_bytes)),
            request_timeout_s=num("request_timeout_s", d.request_timeout_s),
        )
