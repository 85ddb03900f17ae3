"""Slack platform adapter (slack-bolt async + slack-sdk): Socket Mode or the HTTP Events API.

Entry point `slack = "adapters.slack:SPEC"`; docs/platforms/slack.md describes setup.
Importing this package loads only the settings model; slack-bolt is imported when the adapter
is built or one of its names below is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.slack.settings import SlackSettings
from gateway.ports import AdapterSpec, BasePlatformAdapter
from hermes_common.lazy import lazy_exports

if TYPE_CHECKING:
    from adapters.slack.adapter import MAX_LENGTH, SlackAdapter

__all__ = ["MAX_LENGTH", "SPEC", "SlackAdapter", "SlackSettings", "create"]


def _build(name: str, settings: SlackSettings) -> BasePlatformAdapter:
    from adapters.slack.adapter import SlackAdapter

    return SlackAdapter(name, settings)


SPEC = AdapterSpec(settings=SlackSettings, factory=_build)
create = SPEC.create

__getattr__ = lazy_exports(__name__, {
    "MAX_LENGTH": "adapters.slack.adapter",
    "SlackAdapter": "adapters.slack.adapter",
})
