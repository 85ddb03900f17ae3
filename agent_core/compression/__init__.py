"""Context compression: pure engine (messages in, messages out; the summarizer is injected).

Public surface: `ContextEngine`, `ContextCompressor`, `load_engine`, `CompressionSettings`,
`CompressionResult`, `CompressionGuards` (+ guard functions), `Summarizer`, `SummarizerError`,
`compute_threshold`, and the message markers (`SUMMARY_PREFIX`, `COMPRESSED_SUMMARY_KEY`).
"""

from agent_core.compression.engine import (
    ENTRY_POINT_GROUP,
    ContextCompressor,
    ContextEngine,
    available_engines,
    load_engine,
)
from agent_core.compression.guards import (
    CompressionGuards,
    blocked_reason,
    clear_for_manual,
    observe_prompt,
    record_completed,
    record_failure,
    record_ineffective,
)
from agent_core.compression.thresholds import compute_threshold, resolve_model_percent, tail_budget
from agent_core.compression.types import (
    COMPRESSED_SUMMARY_KEY,
    CONTINUATION_TEXT,
    LEGACY_SUMMARY_PREFIX,
    SUMMARY_END_MARKER,
    SUMMARY_PREFIX,
    CompressionResult,
    CompressionSettings,
    CompressionStatus,
    PruneResult,
    Summarizer,
    SummarizerError,
)
from hermes_common.redact import redact

__all__ = [
    "COMPRESSED_SUMMARY_KEY",
    "CONTINUATION_TEXT",
    "ENTRY_POINT_GROUP",
    "LEGACY_SUMMARY_PREFIX",
    "SUMMARY_END_MARKER",
    "SUMMARY_PREFIX",
    "CompressionGuards",
    "CompressionResult",
    "CompressionSettings",
    "CompressionStatus",
    "ContextCompressor",
    "ContextEngine",
    "PruneResult",
    "Summarizer",
    "SummarizerError",
    "available_engines",
    "blocked_reason",
    "clear_for_manual",
    "compute_threshold",
    "load_engine",
    "observe_prompt",
    "record_completed",
    "record_failure",
    "record_ineffective",
    "redact",
    "resolve_model_percent",
    "tail_budget",
]
