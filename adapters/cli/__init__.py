"""The terminal chat adapter (`hermes.adapters` entry point `cli = "adapters.cli:SPEC"`).

`hermes chat` is a thin client of this adapter: it speaks JSON lines over a Unix socket in the
profile (`run/cli.sock`, mode 0600), and the adapter turns its messages into `MessageEvent`s
on the same path as every platform (sessions, storage, agent, tools, slash commands,
compression). See `hermes_common.chatwire` for the protocol.
"""

from __future__ import annotations

from adapters.cli.settings import CliSettings
from gateway.ports import AdapterSpec, lazy_factory

__all__ = ["SPEC", "CliSettings"]

SPEC = AdapterSpec(CliSettings, lazy_factory("adapters.cli.adapter:CliAdapter"))
