"""Slack platform adapter (slack-bolt async + slack-sdk): Socket Mode or the HTTP Events API.

Entry point `slack = "adapters.slack:create"`; docs/platforms/slack.md describes setup.
"""

from __future__ import annotations

from typing import Any

from adapters.slack.adapter import MAX_LENGTH, SlackAdapter
from adapters.slack.settings import SlackSettings

__all__ = ["MAX_LENGTH", "SlackAdapter", "SlackSettings", "create"]


def create(name: str, settings: Any = None) -> SlackAdapter:
    """Factory for the `hermes.adapters` entry point. Raises `ValueError` for bad settings."""
    return SlackAdapter(name, settings)
