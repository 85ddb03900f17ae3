"""Compression scheduling (DESIGN.md §4): a bounded worker pool behind durable SQLite leases
and the storage commit fence, the turn layer's hook, and the auxiliary-model summarizer.

Public surface: `build_compression(config, store, *, metrics=None, on_status=None)` →
`CompressionService` (`wait_idle`, `after_turn`, `compress_for_overflow`, `compress_now`,
`status`, `close`), `CompressionPool`, `JobOutcome`, `AuxSummarizer`.
"""

from gateway.compression.factory import build_compression, engine_settings
from gateway.compression.hook import CompressionService
from gateway.compression.outcome import NOTHING_WRITTEN, JobOutcome, OutcomeStatus
from gateway.compression.pool import CompressionPool, StatusCallback
from gateway.compression.summarizer import AuxSummarizer

__all__ = [
    "NOTHING_WRITTEN",
    "AuxSummarizer",
    "CompressionPool",
    "CompressionService",
    "JobOutcome",
    "OutcomeStatus",
    "StatusCallback",
    "build_compression",
    "engine_settings",
]
