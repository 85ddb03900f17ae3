"""`platforms.telegram`: the settings model of the Telegram adapter (the one schema of its block).

Imports no SDK: `hermes config check` validates the block with this model.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from gateway.ports import SettingsProblem, TokenSettings
from hermes_common.settings import OptSecret, SettingsModel

__all__ = ["TelegramSettings", "WebhookSettings"]


def _leading_slash(path: str) -> str:
    return "/" + path.lstrip("/")


class WebhookSettings(SettingsModel):
    """`platforms.telegram.webhook`: where Telegram posts updates in webhook mode."""

    host: str = "127.0.0.1"
    """Webhook listener bind address."""
    port: int = Field(default=8443, ge=0, le=65535)
    """Webhook listener port (`0` picks a free one)."""
    path: Annotated[str, AfterValidator(_leading_slash)] = "/telegram/webhook"
    """Webhook path."""
    url: str | None = None
    """Public HTTPS URL Telegram posts to (required in webhook mode)."""
    secret_token: OptSecret = None
    """Secret Telegram sends with each update; requests without it are rejected (required in
    webhook mode)."""


class TelegramSettings(TokenSettings):
    """One Telegram bot (DESIGN.md §5; `token` from @BotFather) plus tuning knobs with safe
    defaults. `base_url` / `base_file_url` get the token appended, as on the real Bot API.
    """
    base_url: str = "https://api.telegram.org/bot"
    """Bot API base (self-hosted Bot API server, proxies, tests)."""
    base_file_url: str = "https://api.telegram.org/file/bot"
    """File download base."""
    mode: Literal["polling", "webhook"] = "polling"
    """`polling` (long polling) or `webhook`."""
    poll_timeout_s: float = Field(default=30.0, ge=0, le=300)
    """Long-poll timeout."""
    webhook: WebhookSettings = Field(default_factory=WebhookSettings)
    conflict_retries: int = Field(default=5, ge=1)
    """Consecutive 409 Conflicts (another poller on this token) before the adapter fails."""
    conflict_backoff_s: float = Field(default=2.0, ge=0)
    """First wait after a 409 Conflict (doubled each time, capped at 30 s)."""
    network_retries: int = Field(default=5, ge=1)
    """Consecutive network errors of the poll loop before the adapter fails."""
    network_backoff_s: float = Field(default=1.0, ge=0)
    """First wait after a network error (doubled each time)."""
    max_download_bytes: int = Field(default=20 * 1024 * 1024, ge=1)
    """Size cap of inbound files (the hosted Bot API serves up to 20 MB)."""
    request_timeout_s: float = Field(default=20.0, gt=0)
    """Timeout of one Bot API request (besides the long poll)."""

    def problems(self) -> list[SettingsProblem]:
        out = super().problems()
        if self.enabled and self.mode == "webhook":
            if not self.webhook.url:
                out.append(SettingsProblem("webhook.url", "required in webhook mode"))
            if self.webhook.secret_token is None:
                out.append(SettingsProblem("webhook.secret_token", "required in webhook mode"))
        return out
