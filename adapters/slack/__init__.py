"""Slack platform adapter (slack-bolt async + slack-sdk): Socket Mode or the HTTP Events API.
Registered as the `hermes.adapters` entry point `slack = "adapters.slack:SPEC"`;
docs/platforms/slack.md describes setup.

This package only declares the adapter (its settings model and a lazy factory), so that
finding it imports no SDK; the adapter itself is `adapters.slack.adapter.SlackAdapter`.
"""

from __future__ import annotations

from adapters.slack.settings import SlackSettings
from gateway.ports import AdapterSpec, lazy_factory

__all__ = ["SPEC", "SlackSettings"]

SPEC = AdapterSpec(SlackSettings, lazy_factory("adapters.slack.adapter:SlackAdapter"))
