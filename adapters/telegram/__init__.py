"""The Telegram adapter (python-telegram-bot v22): long polling or webhook, forum topics,
attachments, streaming edits. Registered as the `hermes.adapters` entry point
`telegram = "adapters.telegram:create"`."""

from __future__ import annotations

from typing import Any

from adapters.telegram.adapter import TelegramAdapter
from adapters.telegram.convert import BotIdentity
from adapters.telegram.polling import CURSOR_KEY
from adapters.telegram.settings import TelegramSettings, WebhookSettings
from adapters.telegram.webhook import SECRET_HEADER

__all__ = [
    "CURSOR_KEY",
    "SECRET_HEADER",
    "BotIdentity",
    "TelegramAdapter",
    "TelegramSettings",
    "WebhookSettings",
    "create",
]


def create(name: str, settings: Any) -> TelegramAdapter:
    """Entry-point factory. `settings`: the `platforms.telegram` pydantic model or a dict.

    Raises `ValueError` for malformed settings.
    """
    return TelegramAdapter(name, settings)
