"""The keys every `platforms.<name>` block has (`PlatformSettings`), the bot-token variant
(`TokenSettings`) and the rules a block can break (`SettingsProblem`): the configuration
half of the adapter contract, re-exported by `gateway.ports`. Importable without any
platform SDK, so `hermes config check` stays fast."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from hermes_common.settings import IdList, OptSecret, SettingsModel, reveal, secret_values

__all__ = ["PlatformSettings", "SettingsProblem", "TokenSettings", "ToolProgress"]

ToolProgress = Literal["off", "new", "all"]


@dataclass(frozen=True, slots=True)
class SettingsProblem:
    """A rule a platform block breaks: `key` is relative to the block (`token`, `webhook.url`)."""

    key: str
    message: str


class PlatformSettings(SettingsModel):
    """The keys every `platforms.<name>` block has; each adapter's settings model extends it.

    The model is the one schema of its block: `hermes config check` and `hermes gateway run`
    validate the block with it and the adapter reads its values from it. Unknown keys are
    errors. Secrets are `SecretStr` fields and never appear in `repr()`.
    """

    enabled: bool = False
    """Start this adapter."""
    allowed_users: IdList = Field(default_factory=list)
    """Platform user ids allowed to talk to the bot (in addition to `gateway.allowed_users`)."""
    allow_all: bool = False
    """Explicitly open the platform to every user (otherwise unknown DM users get pairing)."""
    require_mention: bool = True
    """In groups, only messages that mention or reply to the bot reach the agent."""
    tool_progress: ToolProgress | None = None
    """Overrides `gateway.tool_progress` for this platform."""
    toolsets: list[str] | None = None
    """Overrides `tools.toolsets` for this platform."""

    def credential(self) -> str | None:
        """The secret that identifies the platform account (a bot token), or None when the
        platform has none. One gateway per machine may use it: the runner holds a lock named
        by its hash. Adapters with such a credential override this."""
        return None

    def problems(self) -> list[SettingsProblem]:
        """Rules across keys (e.g. a token required when enabled); empty when usable.
        Subclasses extend the list of their base. Must not raise."""
        if self.enabled and "*" in self.allowed_users and not self.allow_all:
            return [SettingsProblem(
                "allowed_users",
                "contains '*' (everyone) but allow_all is not true; set allow_all: true "
                "if that is intended")]
        return []

    def secrets(self) -> list[str]:
        """Every configured secret value of the block (registered for log redaction)."""
        return secret_values(self)


class TokenSettings(PlatformSettings):
    """A platform account reached with one bot token, `token`: required when the platform is
    enabled, and the credential only one gateway per machine may use."""

    token: OptSecret = None
    """Bot token (required when enabled)."""

    def plain_token(self) -> str:
        """The bot token ("" when unset)."""
        return (reveal(self.token) or "").strip()

    def credential(self) -> str | None:
        return self.plain_token() or None

    def problems(self) -> list[SettingsProblem]:
        out = super().problems()
        if self.enabled and self.token is None:
            out.append(SettingsProblem("token", "required when the platform is enabled"))
        return out
