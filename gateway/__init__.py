"""Hermes Gateway: the daemon, its configuration, profiles and command line."""

from hermes_common.lean import (
    defer_aiohttp_ca,
    hide_rich_from_structlog,
    skip_pydantic_plugin_scan,
)

hide_rich_from_structlog()  # structlog, when first imported, skips rich (start-up time)
defer_aiohttp_ca()  # aiohttp's TLS contexts load the CA bundle when first used (start-up)
skip_pydantic_plugin_scan()  # no pydantic plugins: their entry-point scan is skipped

__version__ = "0.1.0"
