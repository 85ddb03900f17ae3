"""Discord adapter (discord.py). Registered as the `hermes.adapters` entry point
`discord = "adapters.discord:SPEC"`; docs/platforms/discord.md describes setup.

This package only declares the adapter (its settings model and a lazy factory), so that
finding it imports no SDK; the adapter itself is `adapters.discord.adapter.DiscordAdapter`.
"""

from __future__ import annotations

from adapters.discord.settings import DiscordSettings
from gateway.ports import AdapterSpec, lazy_factory

__all__ = ["SPEC", "DiscordSettings"]

SPEC = AdapterSpec(DiscordSettings, lazy_factory("adapters.discord.adapter:DiscordAdapter"))
