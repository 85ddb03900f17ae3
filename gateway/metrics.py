"""Prometheus metrics for one gateway process.

Each `GatewayMetrics` owns its own `CollectorRegistry` (never the global default one), so several
gateways can live in one test process. Recording methods are cheap and must not raise.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    ProcessCollector,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

__all__ = ["CONTENT_TYPE", "GatewayMetrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST

_TURN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
_LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

#: Numeric encoding of adapter states for the `hermes_adapter_state` gauge.
ADAPTER_STATE_VALUES: Mapping[str, int] = {
    "stopped": 0,
    "starting": 1,
    "connected": 2,
    "stalled": 3,
    "backoff": 4,
    "failed_fatal": 5,
}


class GatewayMetrics:
    """The gateway's counters and histograms, in a private registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        # Resident memory, CPU seconds, open fds (Linux /proc) and collector stats: a leak or a
        # runaway shows on a dashboard long before the OOM killer does.
        ProcessCollector(registry=r)
        GCCollector(registry=r)
        self.events_in = Counter(
            "hermes_events_in",
            "Inbound events emitted by adapters",
            ["platform", "outcome"],
            registry=r,
        )
        self.events_out = Counter(
            "hermes_events_out", "Messages delivered to platforms", ["platform"], registry=r
        )
        self.turns = Counter("hermes_turns", "Agent turns finished", ["outcome"], registry=r)
        self.turn_latency = Histogram(
            "hermes_turn_latency_seconds",
            "Wall time of one agent turn",
            buckets=_TURN_BUCKETS,
            registry=r,
        )
        self.model_tokens = Counter(
            "hermes_model_tokens", "Model tokens reported by the provider", ["kind"], registry=r
        )
        self.compressions = Counter(
            "hermes_compressions", "Compression jobs by outcome", ["status"], registry=r
        )
        self.adapter_restarts = Counter(
            "hermes_adapter_restarts", "Adapter restarts by the supervisor", ["adapter"], registry=r
        )
        self.adapter_state = Gauge(
            "hermes_adapter_state",
            "Adapter state (0 stopped, 1 starting, 2 connected, 3 stalled, 4 backoff, 5 fatal)",
            ["adapter"],
            registry=r,
        )
        self.loop_lag = Histogram(
            "hermes_event_loop_lag_seconds",
            "Event-loop scheduling delay measured by the watchdog",
            buckets=_LAG_BUCKETS,
            registry=r,
        )
        self.loop_stalls = Counter(
            "hermes_event_loop_stalls", "Event-loop stalls over the watchdog threshold", registry=r
        )

    def event_in(self, platform: str, *, new: bool = True) -> None:
        self.events_in.labels(platform, "new" if new else "duplicate").inc()

    def event_out(self, platform: str) -> None:
        self.events_out.labels(platform).inc()

    def observe_turn(self, seconds: float, *, outcome: str = "ok") -> None:
        """Record one finished turn (`outcome`: ok / interrupted / error ...)."""
        self.turns.labels(outcome).inc()
        self.turn_latency.observe(max(0.0, seconds))

    def add_tokens(self, *, prompt: int = 0, completion: int = 0) -> None:
        if prompt > 0:
            self.model_tokens.labels("prompt").inc(prompt)
        if completion > 0:
            self.model_tokens.labels("completion").inc(completion)

    def compression_outcome(self, status: str) -> None:
        self.compressions.labels(status).inc()

    def adapter_restarted(self, adapter: str) -> None:
        self.adapter_restarts.labels(adapter).inc()

    def set_adapter_state(self, adapter: str, state: str) -> None:
        self.adapter_state.labels(adapter).set(ADAPTER_STATE_VALUES.get(state, -1))

    def render(self) -> bytes:
        """The registry in the Prometheus text exposition format."""
        return generate_latest(self.registry)
