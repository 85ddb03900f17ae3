"""`platforms.api`: the settings model of the `api` adapter (the one schema of its block)."""

from __future__ import annotations

from pydantic import Field

from gateway.ports import PlatformSettings, SettingsProblem, ToolProgress
from hermes_common.settings import SecretList

__all__ = ["ApiSettings"]


class ApiSettings(PlatformSettings):
    """The OpenAI-compatible HTTP server. Every request must carry one of `api_keys` as its
    bearer token (401 otherwise); the gateway's allow-lists and pairing do not apply."""

    host: str = "127.0.0.1"
    """Bind address."""
    port: int = Field(default=8642, ge=0, le=65535)
    """Port (`0` picks a free one)."""
    api_keys: SecretList = Field(default_factory=list)
    """Accepted bearer keys; other requests get 401. Enabled with no keys is an error unless
    `allow_all: true`."""
    model_name: str = "hermes-agent"
    """The model name `/v1/models` lists and completions report."""
    turn_timeout_s: float = Field(default=600.0, gt=0)
    """How long one request waits for the gateway to finish its turn (then 504)."""
    keepalive_s: float = Field(default=15.0, gt=0)
    """Interval of SSE comment lines while a streamed turn is quiet."""
    max_body_bytes: int = Field(default=32 * 1024 * 1024, ge=1)
    """Largest accepted request body (bigger ones get 413)."""
    require_mention: bool = False
    tool_progress: ToolProgress | None = "off"
    """HTTP clients get the reply text only (no tool-progress lines) unless set."""

    def keys(self) -> tuple[str, ...]:
        """The plain bearer keys, blank ones left out."""
        return tuple(k for k in (s.get_secret_value().strip() for s in self.api_keys) if k)

    def problems(self) -> list[SettingsProblem]:
        out = super().problems()
        if self.enabled and not self.api_keys and not self.allow_all:
            out.append(SettingsProblem(
                "api_keys",
                "empty: the API would be open to anyone; add keys or set allow_all: true"))
        return out
