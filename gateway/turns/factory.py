"""`build_turns`: the turn layer wired from the gateway's parts."""

from __future__ import annotations

import time
from collections.abc import Callable

from gateway.agents import AgentFactory
from gateway.approvals import ApprovalDesk
from gateway.delivery.service import DeliveryService
from gateway.media import MediaReader
from gateway.media.replies import VoiceReplies
from gateway.metrics import GatewayMetrics
from gateway.turns.builder import AgentBuilder
from gateway.turns.ports import CompressionHook, ReviewHook, TurnLayerStore
from gateway.turns.service import TurnService, TurnSettings
from gateway.turns.sessions import ResetPolicy, SessionResolver
from gateway.turns.steering import SteerDesk
from gateway.turns.usage import UsageRecorder
from gateway.usage_tally import UsageTally

__all__ = ["build_turns"]


def build_turns(
    store: TurnLayerStore,
    delivery: DeliveryService,
    agents: AgentFactory,
    *,
    reset: ResetPolicy = ResetPolicy(),
    format_hint: Callable[[str], str] = lambda _platform: "",
    settings: TurnSettings = TurnSettings(),
    compression: CompressionHook | None = None,
    metrics: GatewayMetrics | None = None,
    clock: Callable[[], float] = time.time,
    approvals: ApprovalDesk | None = None,
    approval_timeout_s: float = 300.0,
    media: MediaReader | None = None,
    voice: VoiceReplies | None = None,
    reviews: ReviewHook | None = None,
    tally: UsageTally | None = None,
) -> TurnService:
    """Wire the turn layer from the gateway's parts (`tally`: counts the tokens it stores,
    for the dashboard)."""
    builder = AgentBuilder(agents, store, delivery, approvals=approvals,
                           approval_timeout_s=approval_timeout_s)
    return TurnService(
        store, delivery,
        sessions=SessionResolver(store, builder, policy=reset, format_hint=format_hint,
                                 clock=clock, memory=agents.memory),
        agents=builder, steering=SteerDesk(store), usage=UsageRecorder(store, metrics, tally),
        compression=compression, settings=settings, metrics=metrics, media=media,
        voice=voice,
        reviews=reviews,
    )
