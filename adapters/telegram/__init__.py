"""The Telegram adapter (python-telegram-bot v22): long polling or webhook, forum topics,
attachments, streaming edits. Registered as the `hermes.adapters` entry point
`telegram = "adapters.telegram:SPEC"`.

This package only declares the adapter (its settings model and a lazy factory), so that
finding it imports no SDK; the adapter itself is `adapters.telegram.adapter.TelegramAdapter`.
"""

from __future__ import annotations

from adapters.telegram.settings import TelegramSettings, WebhookSettings
from gateway.ports import AdapterSpec, lazy_factory

__all__ = ["SPEC", "TelegramSettings", "WebhookSettings"]

SPEC = AdapterSpec(TelegramSettings, lazy_factory("adapters.telegram.adapter:TelegramAdapter"))
