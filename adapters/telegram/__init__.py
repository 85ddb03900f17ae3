"""The Telegram adapter (python-telegram-bot v22): long polling or webhook, forum topics,
attachments, streaming edits. Registered as the `hermes.adapters` entry point
`telegram = "adapters.telegram:SPEC"`.

Importing this package loads only the settings model; python-telegram-bot is imported when the
adapter is built or one of its names below is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.telegram.settings import TelegramSettings, WebhookSettings
from gateway.ports import AdapterSpec, BasePlatformAdapter
from hermes_common.lazy import lazy_exports

if TYPE_CHECKING:
    from adapters.telegram.adapter import TelegramAdapter
    from adapters.telegram.convert import BotIdentity
    from adapters.telegram.polling import CURSOR_KEY
    from adapters.telegram.webhook import SECRET_HEADER

__all__ = [
    "CURSOR_KEY",
    "SECRET_HEADER",
    "SPEC",
    "BotIdentity",
    "TelegramAdapter",
    "TelegramSettings",
    "WebhookSettings",
    "create",
]


def _build(name: str, settings: TelegramSettings) -> BasePlatformAdapter:
    from adapters.telegram.adapter import TelegramAdapter

    return TelegramAdapter(name, settings)


SPEC = AdapterSpec(settings=TelegramSettings, factory=_build)
create = SPEC.create

__getattr__ = lazy_exports(__name__, {
    "TelegramAdapter": "adapters.telegram.adapter",
    "BotIdentity": "adapters.telegram.convert",
    "CURSOR_KEY": "adapters.telegram.polling",
    "SECRET_HEADER": "adapters.telegram.webhook",
})
