"""Build the dashboard from the running gateway's parts (`GatewayRunner` calls this)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.config.models import DashboardConfig
from gateway.dashboard.server import DashboardServer, DashboardSources
from gateway.status import compression_status, replicas_status, sessions_status
from gateway.wiring import GatewayParts

if TYPE_CHECKING:
    from gateway.replicas import ReplicaRuntime

__all__ = ["dashboard_for"]


def dashboard_for(config: DashboardConfig, parts: GatewayParts, version: str,
                  port: int | None = None, *,
                  replicas: ReplicaRuntime | None = None) -> DashboardServer:
    """The operator's view: ids included (unlike /status without `expose_ids`); the replica
    set when this gateway is one of several on PostgreSQL."""

    sources = DashboardSources(store=parts.store, adapters=parts.supervisor.snapshot,
                               sessions=sessions_status(parts, expose_ids=False),
                               compression=compression_status(parts, expose_ids=True),
                               replicas=replicas_status(replicas), version=version,
                               tally=parts.tally.snapshot)
    token = config.token.get_secret_value() if config.token is not None else None
    return DashboardServer(sources, host=config.host,
                           port=config.port if port is None else port, token=token)
