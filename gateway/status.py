"""What the gateway says about its sessions and compression, for `/status` (health server)
and the dashboard: one source, two audiences (`expose_ids` decides whether session ids of
queues and running jobs are shown, or only their counts)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from gateway.wiring import GatewayParts

if TYPE_CHECKING:
    from gateway.replicas import ReplicaRuntime

__all__ = ["compression_status", "replicas_status", "sessions_status"]


def sessions_status(parts: GatewayParts, *,
                    expose_ids: bool) -> Callable[[], Awaitable[dict[str, Any]]]:
    """Active workers, queue depths (per session key, or their count), held events."""

    async def status() -> dict[str, Any]:
        m = parts.manager
        depths = m.queue_depths()
        queues: dict[str, int] | int = depths if expose_ids else len(depths)
        return {"active": m.active_count, "queues": queues, "queued": sum(depths.values()),
                "held": await parts.store.inbound_held_count()}

    return status


def compression_status(parts: GatewayParts, *,
                       expose_ids: bool) -> Callable[[], dict[str, Any]]:
    """The compression pool's status (running jobs by session id, or their count)."""

    def status() -> dict[str, Any]:
        c = parts.compression
        if c is None:
            return {"enabled": False}
        out = c.status()
        if not expose_ids:
            out["running"] = len(out.get("running") or ())
        return out

    return status


def replicas_status(runtime: ReplicaRuntime | None, *,
                    clock: Callable[[], float] = time.time
                    ) -> Callable[[], Awaitable[dict[str, Any]]]:
    """The replica set as the database knows it (`storage.backend: postgres`): each
    replica's id, host, heartbeat age, sessions owned and leader roles, this one marked."""

    async def status() -> dict[str, Any]:
        if runtime is None:
            return {"enabled": False}
        now = clock()
        return {"enabled": True, "this": runtime.replica_id, "lease_s": runtime.lease_s,
                "replicas": [{"id": r.id, "host": r.host, "pid": r.pid, "live": r.live,
                              "this": r.id == runtime.replica_id,
                              "heartbeat_age_s": round(max(0.0, now - r.heartbeat_at), 1),
                              "sessions": r.sessions, "roles": list(r.roles),
                              "up_s": round(max(0.0, now - r.started_at))}
                             for r in await runtime.replica_set()]}

    return status
