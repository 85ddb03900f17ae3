"""The summarizer prompt always fits the auxiliary window, however big the middle is."""

from __future__ import annotations

import re

from agent_core.compression import CompressionSettings, ContextCompressor
from agent_core.tokens import estimate_text
from tests.compression.compression_support import (
    FIXED_NOW,
    FakeSummarizer,
    roles_alternate,
    tool_pairs_intact,
)


def huge_history(n: int, output_kb: int) -> list[dict]:
    block = ("log line with some words and numbers 12345\n" * (output_kb * 1024 // 43 + 1))[: output_kb * 1024]
    msgs: list[dict] = [{"role": "system", "content": "sys"}]
    i = 0
    while len(msgs) < n:
        cid = f"c{i}"
        msgs += [
            {"role": "user", "content": f"step {i}: run the job"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "terminal", "arguments": f'{{"command": "job {i}"}}'}}
            ]},
            {"role": "tool", "tool_call_id": cid, "content": f"run {i}\n" + block},
            {"role": "assistant", "content": f"job {i} finished"},
        ]
        i += 1
    return msgs


async def test_compression_prompt_fits_aux_window_for_huge_middle():
    aux = 16_000
    summ = FakeSummarizer()
    eng = ContextCompressor(
        summ,
        context_length=200_000,
        settings=CompressionSettings(aux_context_length=aux, max_summarizer_calls=3),
        clock=lambda: FIXED_NOW,
    )
    msgs = huge_history(5_000, 80)
    r = await eng.compress(msgs)
    assert r.status == "compressed"
    assert 1 <= len(summ.requests) <= 3
    for request, max_tokens in zip(summ.requests, summ.max_tokens, strict=True):
        used = sum(estimate_text(m["content"]) + 4 for m in request)
        assert used + max_tokens <= aux
        assert sum(len(m["content"]) for m in request) < aux * 6
    assert "older messages left out" in summ.requests[0][-1]["content"]
    assert roles_alternate(r.messages) and tool_pairs_intact(r.messages)
    assert r.tokens_after < eng.threshold_tokens


async def test_compression_small_main_and_aux_windows_work():
    summ = FakeSummarizer()
    eng = ContextCompressor(
        summ,
        context_length=8_000,
        settings=CompressionSettings(aux_context_length=8_000),
        clock=lambda: FIXED_NOW,
    )
    msgs = huge_history(120, 2)
    r = await eng.compress(msgs)
    assert r.status == "compressed"
    for request, max_tokens in zip(summ.requests, summ.max_tokens, strict=True):
        assert sum(estimate_text(m["content"]) + 4 for m in request) + max_tokens <= 8_000
    assert r.tokens_after < eng.threshold_tokens


async def test_compression_prompt_bounded_per_message_and_sized_to_the_summary():
    summ = FakeSummarizer()
    eng = ContextCompressor(
        summ, context_length=200_000, settings=CompressionSettings(), clock=lambda: FIXED_NOW
    )
    msgs = huge_history(200, 12)
    assert msgs[41]["role"] == "user" and msgs[43]["role"] == "tool"
    msgs[41] = {"role": "user", "content": "START of a long paste " + "z " * 100_000 + " END"}
    msgs[43] = {**msgs[43], "content": "first line\n" + "log data\n" * 100_000 + "last line"}
    r = await eng.compress(msgs)
    assert r.status == "compressed" and len(summ.requests) == 1
    prompt = summ.last_prompt
    turns = r.summarized_messages
    assert all(f" #{i}]" in prompt for i in range(1, turns + 1))  # every turn is shown
    # the long paste keeps its head and tail; the big tool output is a one-liner + excerpt
    assert "START of a long paste" in prompt and "END" in prompt
    assert "chars omitted]" in prompt
    lines = re.search(r"\[terminal\] ran `job 10` -> exit \?, ~([\d,]+) lines output", prompt)
    assert lines is not None and abs(int(lines.group(1).replace(",", "")) - 100_001) < 5_000
    material = estimate_text(prompt.split("TURNS TO SUMMARIZE:\n", 1)[1].split("\n\nWrite the")[0])
    budget = r.details["summary_budget"]
    assert material <= budget * CompressionSettings().summarizer_input_ratio * 1.1
    assert r.summarizer_prompt_chars < 80_000


async def test_compression_big_middle_is_staged_in_bounded_calls():
    summ = FakeSummarizer()
    eng = ContextCompressor(
        summ,
        context_length=200_000,
        settings=CompressionSettings(summarizer_chunk_tokens=3_000, max_summarizer_calls=3),
        clock=lambda: FIXED_NOW,
    )
    r = await eng.compress(huge_history(400, 4))
    assert r.status == "compressed"
    assert len(summ.requests) == 3 == r.summarizer_calls
    assert "PREVIOUS SUMMARY" in summ.requests[1][-1]["content"]
    assert "stage 1" in summ.requests[1][-1]["content"]
    for request in summ.requests:
        turns_part = request[-1]["content"].split("TURNS TO", 1)[1].split("\n\nWrite the")[0]
        assert estimate_text(turns_part) <= 3_000 * 1.1
