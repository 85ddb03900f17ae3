"""Settings of the `api` adapter, read from `platforms.api` (a pydantic model or a dict)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ApiSettings"]


def _secret(value: Any) -> str:
    getter = getattr(value, "get_secret_value", None)
    return str(getter() if callable(getter) else value).strip()


def _keys(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    items: list[Any] = raw.split(",") if isinstance(raw, str) else list(raw)
    return tuple(k for k in (_secret(item) for item in items) if k)


@dataclass(frozen=True, slots=True)
class ApiSettings:
    """`platforms.api`: {enabled, host, port, api_keys} plus a few optional knobs.

    `port` 0 binds an ephemeral port. `api_keys` may be a list or a comma-separated string;
    with no keys every request is refused (401). `turn_timeout_s` bounds how long one request
    waits for the gateway to finish its turn (then 504). `keepalive_s` is the interval of SSE
    comment lines while a streamed turn is quiet.
    """

    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = 8642
    api_keys: tuple[str, ...] = ()
    model_name: str = "hermes-agent"
    turn_timeout_s: float = 600.0
    keepalive_s: float = 15.0
    max_body_bytes: int = 32 * 1024 * 1024

    def __repr__(self) -> str:
        return (
            f"ApiSettings(enabled={self.enabled}, host={self.host!r}, port={self.port}, "
            f"api_keys=<{len(self.api_keys)} redacted>, model_name={self.model_name!r})"
        )

    __str__ = __repr__

    @classmethod
    def from_any(cls, settings: Any) -> ApiSettings:
        """Build from a dict, a pydantic model, an `ApiSettings` or None.

        Raises `ValueError` for values of the wrong type (e.g. a non-numeric port).
        """
        if isinstance(settings, ApiSettings):
            return settings
        if settings is None:
            data: Mapping[str, Any] = {}
        elif isinstance(settings, Mapping):
            data = settings
        elif hasattr(settings, "model_dump"):
            data = {k: getattr(settings, k) for k in settings.model_dump()}
        else:
            data = vars(settings)
        defaults = cls()
        return cls(
            enabled=bool(data.get("enabled", defaults.enabled)),
            host=str(data.get("host") or defaults.host),
            port=int(data.get("port", defaults.port) or 0),
            api_keys=_keys(data.get("api_keys")),
            model_name=str(data.get("model_name") or defaults.model_name),
            turn_timeout_s=float(data.get("turn_timeout_s") or defaults.turn_timeout_s),
            keepalive_s=float(data.get("keepalive_s") or defaults.keepalive_s),
            max_body_bytes=int(data.get("max_body_bytes") or defaults.max_body_bytes),
        )
