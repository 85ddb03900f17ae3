"""Build the dashboard from the running gateway's parts (`GatewayRunner` calls this)."""

from __future__ import annotations

from typing import Any

from gateway.config.models import DashboardConfig
from gateway.dashboard.server import DashboardServer, DashboardSources
from gateway.wiring import GatewayParts

__all__ = ["dashboard_for"]


def dashboard_for(config: DashboardConfig, parts: GatewayParts, version: str,
                  port: int | None = None) -> DashboardServer:
    """The operator's view: ids included (unlike /status without `expose_ids`)."""

    async def sessions() -> dict[str, Any]:
        m = parts.manager
        depths = m.queue_depths()
        return {"active": m.active_count, "queues": len(depths), "queued": sum(depths.values()),
                "held": await parts.store.inbound_held_count()}

    def compression() -> dict[str, Any]:
        c = parts.compression
        return {"enabled": False} if c is None else c.status()

    sources = DashboardSources(store=parts.store, adapters=parts.supervisor.snapshot,
                               sessions=sessions, compression=compression, version=version)
    token = config.token.get_secret_value() if config.token is not None else None
    return DashboardServer(sources, host=config.host,
                           port=config.port if port is None else port, token=token)
