"""Hermes Gateway: the daemon, its configuration, profiles and command line."""

__version__ = "0.1.0"
