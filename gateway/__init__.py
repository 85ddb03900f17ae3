"""Hermes Gateway: the daemon, its configuration, profiles and command line."""

from hermes_common.lean import structlog_without_rich

structlog_without_rich()  # before any module of ours imports structlog (start-up time)

__version__ = "0.1.0"
