"""Builders and a fake summarizer shared by the compression tests."""

from __future__ import annotations

import json
from typing import Any

from agent_core.compression import SummarizerError

FIXED_NOW = 1_780_000_000.0  # 2026-05-28 (UTC)


class FakeSummarizer:
    """Records every request; answers with a scripted reply or raises a scripted error."""

    def __init__(self, reply: str | None = None, errors: list[Exception] | None = None) -> None:
        self.requests: list[list[dict[str, Any]]] = []
        self.max_tokens: list[int] = []
        self.reply = reply
        self.errors = list(errors or [])

    async def summarize(self, messages: list[dict[str, Any]], *, max_tokens: int) -> str:
        self.requests.append(messages)
        self.max_tokens.append(max_tokens)
        if self.errors:
            raise self.errors.pop(0)
        if self.reply is not None:
            return self.reply
        n = len(self.requests)
        return (
            f"## Historical Task Snapshot\nstage {n}\n## Goal\nkeep going\n"
            f"## Completed Actions\n1. did things — ok [tool: terminal]\n## Pruned Skills\nNone."
        )

    @property
    def last_prompt(self) -> str:
        return self.requests[-1][-1]["content"]


def transient(reason: str = "429 rate limited") -> SummarizerError:
    return SummarizerError("transient", reason)


def tool_turn(i: int, output: str, *, command: str | None = None, name: str = "terminal") -> list[dict]:
    """user -> assistant(tool call) -> tool result -> assistant answer."""
    cid = f"call_{i}"
    args = json.dumps({"command": command or f"echo {i}"})
    return [
        {"role": "user", "content": f"please run step {i}"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            ],
        },
        {"role": "tool", "tool_call_id": cid, "content": output},
        {"role": "assistant", "content": f"step {i} done"},
    ]


def conversation(turns: int, output_size: int = 2000, system: bool = True) -> list[dict]:
    msgs: list[dict] = [{"role": "system", "content": "You are Hermes."}] if system else []
    for i in range(turns):
        msgs += tool_turn(i, f"line {i}\n" + ("x" * (output_size - 10)) + f"\nexit_code: 0 {i}")
    return msgs


def roles_alternate(messages: list[dict]) -> bool:
    prev = None
    for m in messages:
        role = m["role"]
        if role in ("user", "assistant") and role == prev:
            return False
        if role != "tool":
            prev = role
        else:
            prev = "tool"
    return True


def tool_pairs_intact(messages: list[dict]) -> bool:
    calls = {c["id"] for m in messages for c in m.get("tool_calls") or []}
    results = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    return calls == results
