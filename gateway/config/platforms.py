"""`platforms:` blocks of the configuration contract (DESIGN.md §5)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from gateway.config.base import ConfigModel, IdList, OptSecret, SecretList
from gateway.config.errors import Problem

__all__ = [
    "ApiPlatform",
    "DiscordPlatform",
    "HttpListen",
    "PlatformBase",
    "PlatformsConfig",
    "SlackPlatform",
    "TelegramPlatform",
    "TelegramWebhook",
    "ToolProgress",
]

ToolProgress = Literal["off", "new", "all"]
Port = int


class PlatformBase(ConfigModel):
    """Keys every platform block has."""

    enabled: bool = False
    allowed_users: IdList = Field(default_factory=list)
    allow_all: bool = False
    """Explicitly open the platform to every user (otherwise unknown DM users get pairing)."""
    require_mention: bool = True
    """In groups, only messages that mention or reply to the bot reach the agent."""
    tool_progress: ToolProgress | None = None
    """Overrides `gateway.tool_progress` for this platform."""

    def problems(self, prefix: str) -> list[Problem]:
        return []


class TelegramWebhook(ConfigModel):
    host: str = "127.0.0.1"
    port: Port = Field(default=8443, ge=1, le=65535)
    path: str = "/telegram/webhook"
    url: str | None = None
    """Public HTTPS URL Telegram posts to."""
    secret_token: OptSecret = None


class TelegramPlatform(PlatformBase):
    token: OptSecret = None
    base_url: str = "https://api.telegram.org/bot"
    base_file_url: str = "https://api.telegram.org/file/bot"
    mode: Literal["polling", "webhook"] = "polling"
    poll_timeout_s: float = Field(default=30.0, ge=0, le=300)
    webhook: TelegramWebhook = Field(default_factory=TelegramWebhook)

    def problems(self, prefix: str) -> list[Problem]:
        out: list[Problem] = []
        if not self.enabled:
            return out
        if self.token is None:
            out.append(Problem(f"{prefix}.token", "required when the platform is enabled"))
        if self.mode == "webhook":
            if not self.webhook.url:
                out.append(Problem(f"{prefix}.webhook.url", "required in webhook mode"))
            if self.webhook.secret_token is None:
                out.append(
                    Problem(f"{prefix}.webhook.secret_token", "required in webhook mode")
                )
        return out


class HttpListen(ConfigModel):
    host: str = "127.0.0.1"
    port: Port = Field(default=3000, ge=1, le=65535)
    path: str = "/slack/events"


class SlackPlatform(PlatformBase):
    bot_token: OptSecret = None
    app_token: OptSecret = None
    signing_secret: OptSecret = None
    mode: Literal["socket", "http"] = "socket"
    api_base_url: str = "https://slack.com/api/"
    http: HttpListen = Field(default_factory=HttpListen)

    def problems(self, prefix: str) -> list[Problem]:
        out: list[Problem] = []
        if not self.enabled:
            return out
        if self.bot_token is None:
            out.append(Problem(f"{prefix}.bot_token", "required when the platform is enabled"))
        if self.mode == "socket" and self.app_token is None:
            out.append(Problem(f"{prefix}.app_token", "required in socket mode"))
        if self.mode == "http" and self.signing_secret is None:
            out.append(Problem(f"{prefix}.signing_secret", "required in http mode"))
        return out


class DiscordPlatform(PlatformBase):
    token: OptSecret = None
    api_base_url: str = "https://discord.com/api/v10"
    gateway_url: str | None = None
    """Websocket URL of the Discord gateway; None lets the library discover it."""

    def problems(self, prefix: str) -> list[Problem]:
        if self.enabled and self.token is None:
            return [Problem(f"{prefix}.token", "required when the platform is enabled")]
        return []


class ApiPlatform(PlatformBase):
    """OpenAI-compatible `/v1/chat/completions` server."""

    host: str = "127.0.0.1"
    port: Port = Field(default=8642, ge=0, le=65535)
    api_keys: SecretList = Field(default_factory=list)
    """Accepted bearer keys; requests without one of them get 401."""
    require_mention: bool = False
    tool_progress: ToolProgress | None = "off"
    """HTTP clients get the reply text only (no tool-progress lines) unless set."""

    def problems(self, prefix: str) -> list[Problem]:
        if self.enabled and not self.api_keys and not self.allow_all:
            return [
                Problem(
                    f"{prefix}.api_keys",
                    "empty: the API would be open to anyone; add keys or set allow_all: true",
                )
            ]
        return []


class PlatformsConfig(ConfigModel):
    """Built-in platforms; other keys are kept (see `plugin_blocks`) for plugin adapters."""

    model_config = ConfigDict(extra="allow", frozen=True, validate_default=True)

    telegram: TelegramPlatform = Field(default_factory=TelegramPlatform)
    slack: SlackPlatform = Field(default_factory=SlackPlatform)
    discord: DiscordPlatform = Field(default_factory=DiscordPlatform)
    api: ApiPlatform = Field(default_factory=ApiPlatform)

    def builtin(self) -> dict[str, PlatformBase]:
        return {"telegram": self.telegram, "slack": self.slack, "discord": self.discord,
                "api": self.api}

    def enabled(self) -> list[str]:
        """Names of enabled built-in platforms, plus plugin blocks with `enabled: true`."""
        names = [n for n, p in self.builtin().items() if p.enabled]
        names += [n for n, b in self.plugin_blocks().items() if b.get("enabled")]
        return names

    def plugin_blocks(self) -> dict[str, dict[str, Any]]:
        """Raw config of platforms that are not built in (for entry-point adapters)."""
        extra = self.model_extra or {}
        return {k: v for k, v in extra.items() if isinstance(v, dict)}

    def problems(self, prefix: str = "platforms") -> list[Problem]:
        out: list[Problem] = []
        for name, block in self.builtin().items():
            out += block.problems(f"{prefix}.{name}")
        return out
