"""Discord adapter (discord.py): entry point `discord = "adapters.discord:create"`.

Config: `platforms.discord` {token, api_base_url, gateway_url}; see docs/platforms/discord.md.
"""

from __future__ import annotations

from typing import Any

from adapters.discord.adapter import MAX_MESSAGE_LENGTH, DiscordAdapter
from adapters.discord.endpoints import apply_endpoints
from adapters.discord.settings import DiscordSettings

__all__ = ["MAX_MESSAGE_LENGTH", "DiscordAdapter", "DiscordSettings", "apply_endpoints", "create"]


def create(name: str, settings: Any = None) -> DiscordAdapter:
    """Entry-point factory: `settings` is the `platforms.discord` model, a dict or None."""
    return DiscordAdapter(name, DiscordSettings.from_any(settings))
