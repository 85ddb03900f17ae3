"""Discord adapter (discord.py): entry point `discord = "adapters.discord:SPEC"`.

Config: `platforms.discord` (`DiscordSettings`); see docs/platforms/discord.md. Importing this
package loads only the settings model; discord.py is imported when the adapter is built or one
of its names below is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.discord.settings import DiscordSettings
from gateway.ports import AdapterSpec, BasePlatformAdapter
from hermes_common.lazy import lazy_exports

if TYPE_CHECKING:
    from adapters.discord.adapter import MAX_MESSAGE_LENGTH, DiscordAdapter
    from adapters.discord.endpoints import apply_endpoints

__all__ = [
    "MAX_MESSAGE_LENGTH",
    "SPEC",
    "DiscordAdapter",
    "DiscordSettings",
    "apply_endpoints",
    "create",
]


def _build(name: str, settings: DiscordSettings) -> BasePlatformAdapter:
    from adapters.discord.adapter import DiscordAdapter

    return DiscordAdapter(name, settings)


SPEC = AdapterSpec(settings=DiscordSettings, factory=_build)
create = SPEC.create

__getattr__ = lazy_exports(__name__, {
    "MAX_MESSAGE_LENGTH": "adapters.discord.adapter",
    "DiscordAdapter": "adapters.discord.adapter",
    "apply_endpoints": "adapters.discord.endpoints",
})
