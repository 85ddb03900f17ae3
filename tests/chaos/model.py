"""The model side of a chaos run: a seeded responder for the fake OpenAI server.

A normal answer names every marker of the user messages the turn is answering (those after
the last assistant message) and ends with `END`, so what reached a chat can be traced back to
the messages it answers, and a final cut short is visible. With `fault_rate`, a request gets a
fault instead: 429 with and without Retry-After, 500/502/529, a timeout (answer later than the
client waits), a hang, a stream cut mid-way (connection dropped), an error event mid-stream, or
a context-overflow error. Compression (summarizer) requests get a valid summary and are
counted, so the harness can aim a kill at one.
"""

from __future__ import annotations

import random
import re
from collections import Counter

from agent_core.compression.summarize import SECTIONS
from tests.fakes.openai_server import (
    Cut,
    Hang,
    RecordedRequest,
    Reply,
    Script,
    context_overflow,
    rate_limited,
    server_error,
    stream_error,
)

__all__ = ["MARKER", "ChaosModel", "answer_text", "is_summary_request"]

MARKER = re.compile(r"\bmsg\d{6}\b")
SUMMARIZER_PREFIX = "You write context checkpoints"
SUMMARY = "\n".join(f"## {s}\nNone." for s in SECTIONS)
TOKENS_PER_MESSAGE = 150  # reported prompt usage per message: drives compression thresholds

FAULTS: tuple[tuple[str, float], ...] = (
    ("model_429_retry_after", 3), ("model_429_no_retry_after", 2), ("model_500", 2),
    ("model_502", 1), ("model_529", 1), ("model_timeout", 1), ("model_hang", 1),
    ("model_stream_cut", 2), ("model_stream_error", 1), ("model_context_overflow", 1),
)


def answer_text(markers: list[str]) -> str:
    return " ".join(["ok", *markers, "END"])


def _text(content: object) -> str:
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def is_summary_request(req: RecordedRequest) -> bool:
    msgs = req.messages
    return bool(msgs) and msgs[0].get("role") == "system" and _text(
        msgs[0].get("content")).startswith(SUMMARIZER_PREFIX)


def pending_markers(req: RecordedRequest) -> list[str]:
    """Markers of the user messages after the last assistant message, in order."""
    found: list[str] = []
    for msg in req.messages:
        if msg.get("role") == "assistant":
            found = []
        elif msg.get("role") == "user":
            for m in MARKER.findall(_text(msg.get("content"))):
                if m not in found:
                    found.append(m)
    return found


class ChaosModel:
    """Responder for `FakeOpenAIServer(responder=...)`. `client_timeout_s` is the gateway's
    provider timeout (a `model_timeout` answers just after it)."""

    def __init__(self, rng: random.Random, *, fault_rate: float, client_timeout_s: float,
                 chunk_delay_s: float = 0.03) -> None:
        self.rng = rng
        self.fault_rate = fault_rate
        self.client_timeout_s = client_timeout_s
        self.chunk_delay_s = chunk_delay_s
        self.faults: Counter[str] = Counter()
        self.summaries = 0
        self.answers = 0

    def _usage(self, req: RecordedRequest, completion: int) -> dict[str, int]:
        prompt = TOKENS_PER_MESSAGE * len(req.messages)
        return {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion}

    def __call__(self, req: RecordedRequest) -> Script:
        if is_summary_request(req):
            self.summaries += 1
            # a little slower than a turn, so a kill can land while one runs
            return Reply(SUMMARY, delay_s=0.05, chunk_chars=40, usage=self._usage(req, 60))
        if self.fault_rate and self.rng.random() < self.fault_rate:
            kinds, weights = zip(*FAULTS, strict=True)
            kind = self.rng.choices(kinds, weights)[0]
            self.faults[kind] += 1
            return self._fault(kind)
        self.answers += 1
        text = answer_text(pending_markers(req))
        return Reply(text, delay_s=self.chunk_delay_s * self.rng.uniform(0.5, 2.0),
                     usage=self._usage(req, len(text) // 4 + 1))

    def _fault(self, kind: str) -> Script:
        match kind:
            case "model_429_retry_after":
                return rate_limited(retry_after=self.rng.choice((0, 1)))
            case "model_429_no_retry_after":
                return rate_limited(retry_after=None)
            case "model_500":
                return server_error(500)
            case "model_502":
                return server_error(502)
            case "model_529":
                return server_error(529)
            case "model_timeout":
                return Hang(self.client_timeout_s + 1.0)
            case "model_hang":
                return Hang(3600.0)
            case "model_stream_cut":
                return Cut("ok partial answer that never")
            case "model_stream_error":
                return stream_error("ok partial answer then")
            case _:
                return context_overflow()
