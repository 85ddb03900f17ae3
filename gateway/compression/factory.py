"""`build_compression`: wire engine, summarizer and pool from `HermesConfig`."""

from __future__ import annotations

import time
from collections.abc import Callable

from agent_core.compression import CompressionSettings, load_engine
from gateway.agents import provider_settings
from gateway.compression.hook import CompressionService
from gateway.compression.pool import CompressionPool, StatusCallback
from gateway.compression.ports import CompressionMemory, CompressionStore
from gateway.compression.runner import PromptBuilder
from gateway.compression.summarizer import AuxSummarizer
from gateway.config.models import HermesConfig
from gateway.metrics import GatewayMetrics

__all__ = ["build_compression", "engine_settings"]


def engine_settings(config: HermesConfig) -> CompressionSettings:
    """The engine's settings from `compression.*` (and the auxiliary model's window)."""
    c = config.compression
    _, aux, _ = config.auxiliary_target()
    return CompressionSettings(
        threshold_percent=c.threshold_percent,
        threshold_tokens=c.threshold_tokens,
        model_thresholds=dict(c.model_thresholds),
        protect_first_n=c.protect_first_n,
        summary_target_ratio=c.summary_target_ratio,
        abort_on_summary_failure=c.abort_on_summary_failure,
        deterministic_fallback=c.fallback_without_llm,
        aux_context_length=aux.context_length,
    )


def build_compression(
    config: HermesConfig,
    store: CompressionStore,
    *,
    metrics: GatewayMetrics | None = None,
    on_status: StatusCallback | None = None,
    renew_leases: bool = True,
    clock: Callable[[], float] = time.time,
    prompt_builder: PromptBuilder | None = None,
    memory: CompressionMemory | None = None,
) -> CompressionService:
    """The compression hook for a process: engine (`load_engine`, thresholds from config and
    the main provider's model and window), summarizer (`auxiliary.provider`/`model`) and pool
    (`compression.workers`, `queue_size`, `mode`, `lease_seconds`, `timeout_seconds`);
    `memory`: the external memory provider (its pre-compression text, the rotation).

    Workers start on the first job, inside the running loop. Raises KeyError for an undefined
    provider (a validated config has none) and LookupError for an unknown engine name
    (`compression.engine`, when the config model grows that key).
    """
    main = config.provider()
    aux_name, aux_cfg, aux_model = config.auxiliary_target()
    summarizer = AuxSummarizer(provider_settings(aux_name, aux_cfg, model=aux_model))
    engine = load_engine(
        getattr(config.compression, "engine", None),
        summarizer=summarizer,
        context_length=main.context_length,
        model=main.model,
        settings=engine_settings(config),
        clock=clock,
    )
    c = config.compression
    pool = CompressionPool(
        store,
        engine,
        workers=c.workers,
        queue_size=c.queue_size,
        mode=c.mode,
        lease_seconds=c.lease_seconds,
        timeout_seconds=c.timeout_seconds,
        renew_leases=renew_leases,
        on_status=on_status,
        metrics=metrics,
        clock=clock,
        prompt_builder=prompt_builder,
        memory=memory,
    )
    return CompressionService(pool, enabled=c.enabled, closers=[summarizer])
