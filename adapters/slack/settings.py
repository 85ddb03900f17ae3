"""`platforms.slack`: the settings model of the Slack adapter (the one schema of its block).

Imports no SDK: `hermes config check` validates the block with this model.
"""

from __future__ import annotations

from typing import Annotated, Literal, NamedTuple

from pydantic import AfterValidator, Field

from gateway.ports import PlatformSettings, SettingsProblem
from hermes_common.settings import OptSecret, SettingsModel, reveal

__all__ = ["DEFAULT_API_BASE_URL", "HttpSettings", "SlackSecrets", "SlackSettings"]

DEFAULT_API_BASE_URL = "https://slack.com/api/"


def _trailing_slash(url: str) -> str:
    url = url.strip() or DEFAULT_API_BASE_URL
    return url if url.endswith("/") else url + "/"


class SlackSecrets(NamedTuple):
    bot_token: str
    app_token: str
    signing_secret: str


class HttpSettings(SettingsModel):
    """`platforms.slack.http`: the Events API listener of http mode."""

    host: str = "127.0.0.1"
    """Events API listener bind address."""
    port: int = Field(default=3000, ge=0, le=65535)
    """Events API listener port (`0` picks a free one)."""
    path: str = "/slack/events"
    """Events API path."""


class SlackSettings(PlatformSettings):
    """One Slack app: Socket Mode (needs `app_token`) or the HTTP Events API (needs
    `signing_secret`)."""

    bot_token: OptSecret = None
    """`xoxb-…` bot token (required when enabled)."""
    app_token: OptSecret = None
    """`xapp-…` app-level token (required in socket mode)."""
    signing_secret: OptSecret = None
    """Request signing secret (required in http mode)."""
    mode: Literal["socket", "http"] = "socket"
    """`socket` (Socket Mode) or `http` (Events API)."""
    api_base_url: Annotated[str, AfterValidator(_trailing_slash)] = DEFAULT_API_BASE_URL
    """Web API base URL (a trailing `/` is added: the SDK joins method names onto it)."""
    http: HttpSettings = Field(default_factory=HttpSettings)
    ping_interval_s: float = Field(default=10.0, gt=0)
    """Socket Mode ping/pong period."""
    timeout_s: float = Field(default=30.0, gt=0)
    """Timeout of each Web API call."""
    connect_timeout_s: float = Field(default=30.0, gt=0)
    """Timeout of opening the Socket Mode connection."""
    give_up_s: float = Field(default=0.0, ge=0)
    """Seconds Socket Mode may stay disconnected before the adapter fails (`0` = derived from
    the ping interval: max(20, 6 × `ping_interval_s`))."""

    def credential(self) -> str | None:
        return self.plain().bot_token or None

    def plain(self) -> SlackSecrets:
        """The tokens as plain strings ("" when unset)."""
        return SlackSecrets(*((reveal(s) or "").strip()
                              for s in (self.bot_token, self.app_token, self.signing_secret)))

    def problems(self) -> list[SettingsProblem]:
        out = super().problems()
        if not self.enabled:
            return out
        if self.bot_token is None:
            out.append(SettingsProblem("bot_token", "required when the platform is enabled"))
        if self.mode == "socket" and self.app_token is None:
            out.append(SettingsProblem("app_token", "required in socket mode"))
        if self.mode == "http" and self.signing_secret is None:
            out.append(SettingsProblem("signing_secret", "required in http mode"))
        return out
