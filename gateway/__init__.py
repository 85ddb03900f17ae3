"""Hermes Gateway: the daemon, its configuration, profiles and command line."""

from hermes_common.lean import hide_rich_from_structlog

hide_rich_from_structlog()  # structlog, when first imported, skips rich (start-up time)

__version__ = "0.1.0"
