"""The five-step pipeline on concrete message lists (fake summarizer, no network)."""

from __future__ import annotations

import copy
import json

import pytest

from agent_core.compression import (
    COMPRESSED_SUMMARY_KEY,
    CONTINUATION_TEXT,
    CompressionSettings,
    ContextCompressor,
    load_engine,
)
from agent_core.compression.boundaries import find_tail_cut
from agent_core.compression.prune import DUPLICATE_MARKER, IMAGE_REMOVED
from agent_core.tokens import TOKEN_CACHE_KEY
from tests.compression.compression_support import (
    FIXED_NOW,
    FakeSummarizer,
    conversation,
    roles_alternate,
    tool_pairs_intact,
    tool_turn,
)


def engine(summ=None, ctx=32_000, **settings):
    return ContextCompressor(
        summ or FakeSummarizer(),
        context_length=ctx,
        settings=CompressionSettings(**settings),
        clock=lambda: FIXED_NOW,
    )


def summaries(msgs):
    return [m for m in msgs if m.get(COMPRESSED_SUMMARY_KEY)]


def strip_cache(msgs):
    return [{k: v for k, v in m.items() if k != TOKEN_CACHE_KEY} for m in msgs]


def test_compression_tail_cut_inside_tool_group_moves_before_assistant():
    call = lambda cid: {"id": cid, "type": "function", "function": {"name": "read_file", "arguments": "{}"}}  # noqa: E731
    msgs = [{"role": "system", "content": "sys"}]
    for i in range(6):
        msgs += [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]
    group_at = len(msgs) + 1
    msgs += [
        {"role": "user", "content": "read three files"},
        {"role": "assistant", "content": "", "tool_calls": [call("c1"), call("c2"), call("c3")]},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 40_000},
        {"role": "tool", "tool_call_id": "c2", "content": "small"},
        {"role": "tool", "tool_call_id": "c3", "content": "small"},
        {"role": "assistant", "content": "done reading"},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "welcome"},
    ]
    cut = find_tail_cut(msgs, 1, budget=200, floor=1)
    assert cut == group_at
    assert msgs[cut]["role"] == "assistant" and msgs[cut]["tool_calls"]


async def test_compression_output_keeps_tool_pairs_and_alternates():
    r = await engine().compress(conversation(60, 3000))
    assert r.status == "compressed"
    assert tool_pairs_intact(r.messages) and roles_alternate(r.messages)
    assert r.tokens_after < r.tokens_before / 2


def test_compression_dedup_keeps_newest_copy():
    same = "identical build log line\n" * 20
    msgs = [{"role": "system", "content": "s"}]
    for i in range(3):
        msgs += tool_turn(i, same)
    res = engine(ctx=2_000_000).prune_tool_results_only(msgs)
    outputs = [m["content"] for m in res.messages if m["role"] == "tool"]
    assert outputs == [DUPLICATE_MARKER, DUPLICATE_MARKER, same]
    assert res.deduplicated == 2
    assert [m["content"] for m in msgs if m["role"] == "tool"] == [same] * 3  # input untouched


def test_compression_prune_old_results_become_informative_one_liners():
    msgs = [{"role": "system", "content": "s"}]
    msgs += tool_turn(100, "test passed\n" * 46 + "exit_code: 0", command="npm test")
    msgs += conversation(30, 500, system=False)
    res = engine().prune_tool_results_only(msgs)
    assert res.messages[3]["content"] == "[terminal] ran `npm test` -> exit 0, 47 lines output"
    assert res.messages[-2]["content"] == msgs[-2]["content"]  # protected tail untouched


def test_compression_prune_cuts_long_string_leaves_of_old_tool_arguments():
    body = "b" * 1_000
    big_args = {"path": "notes.md", "content": body, "meta": {"tags": ["t" * 300, "ok"]}}
    msgs = [{"role": "system", "content": "s"}]
    msgs += tool_turn(1, "wrote it")
    msgs[2]["tool_calls"][0]["function"]["arguments"] = json.dumps(big_args)
    msgs += tool_turn(2, "wrote it too")
    msgs[6]["tool_calls"][0]["function"]["arguments"] = "{not json" + "x" * 600
    msgs += conversation(30, 500, system=False)
    res = engine().prune_tool_results_only(msgs)
    cut = json.loads(res.messages[2]["tool_calls"][0]["function"]["arguments"])
    assert cut["path"] == "notes.md" and cut["meta"]["tags"][1] == "ok"
    assert cut["content"] == "b" * 200 + "...[truncated]"
    assert cut["meta"]["tags"][0] == "t" * 200 + "...[truncated]"
    assert res.messages[6]["tool_calls"][0]["function"]["arguments"].startswith("{not json")
    assert res.truncated_arguments == 1
    assert json.loads(msgs[2]["tool_calls"][0]["function"]["arguments"]) == big_args  # untouched


def test_compression_prune_replaces_old_screenshots_with_a_note():
    shot = [{"type": "text", "text": "page loaded"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 5_000}}]
    msgs = [{"role": "system", "content": "s"}]
    msgs += tool_turn(1, "")
    msgs[3]["content"] = shot
    msgs += conversation(30, 500, system=False)
    res = engine().prune_tool_results_only(msgs)
    assert res.messages[3]["content"] == [{"type": "text", "text": "page loaded"},
                                          {"type": "text", "text": IMAGE_REMOVED}]
    assert res.pruned >= 1 and msgs[3]["content"] is shot and len(shot) == 2


async def test_compression_head_decays_after_first_compression():
    eng = engine()
    msgs = conversation(60, 3000)
    first = await eng.compress(msgs)
    assert [m["content"] for m in first.messages[1:2]] == ["please run step 0"]
    grown = first.messages + conversation(40, 3000, system=False)[0:160]
    second = await eng.compress(grown)
    assert second.status == "compressed"
    assert second.messages[0]["role"] == "system"
    assert second.messages[1].get(COMPRESSED_SUMMARY_KEY)
    assert all(m.get("content") != "please run step 0" for m in second.messages)


async def test_compression_three_rounds_leave_exactly_one_summary():
    summ = FakeSummarizer()
    eng = engine(summ)
    msgs = conversation(50, 3000)
    for _ in range(3):
        r = await eng.compress(msgs)
        assert r.status == "compressed", r.reason
        assert len(summaries(r.messages)) == 1
        assert roles_alternate(r.messages) and tool_pairs_intact(r.messages)
        msgs = r.messages + conversation(40, 3000, system=False)
    assert "PREVIOUS SUMMARY" in summ.last_prompt and "stage 2" in summ.last_prompt
    assert "PREVIOUS SUMMARY" not in summ.requests[0][-1]["content"]


async def test_compression_summary_message_shape():
    r = await engine().compress(conversation(40))
    [summary] = summaries(r.messages)
    assert summary["content"].startswith("[CONTEXT COMPACTION")
    assert "## Goal" in summary["content"]
    assert r.summary == summary["content"]
    assert "compacted" in r.messages[0]["content"]  # system note appended once
    again = await engine().compress(r.messages + conversation(40, system=False))
    assert again.messages[0]["content"].count("compacted into a handoff summary") == 1


async def test_compression_continuation_when_no_user_turn_survives():
    msgs = [{"role": "system", "content": "cron agent"}]
    for i in range(40):
        cid = f"c{i}"
        msgs += [
            {"role": "assistant", "content": f"checking {i}", "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "terminal", "arguments": '{"command": "uptime"}'}}
            ]},
            {"role": "tool", "tool_call_id": cid, "content": "load " * 400},
        ]
    msgs.append({"role": "assistant", "content": "all good"})
    r = await engine().compress(msgs)
    assert r.status == "compressed"
    idx = next(i for i, m in enumerate(r.messages) if m.get(COMPRESSED_SUMMARY_KEY))
    assert r.messages[idx]["role"] == "assistant"
    assert strip_cache([r.messages[idx + 1]]) == [
        {"role": "user", "content": CONTINUATION_TEXT, "_synthetic": "continuation"}
    ]
    assert r.messages[idx + 2]["role"] == "assistant"
    assert roles_alternate(r.messages) and tool_pairs_intact(r.messages)


async def test_compression_does_not_mutate_input():
    msgs = conversation(40, 3000)
    msgs.insert(5, {"role": "user", "content": "   "})
    before = copy.deepcopy(msgs)
    await engine().compress(msgs)
    assert strip_cache(msgs) == before


async def test_compression_blank_user_echo_dropped():
    msgs = conversation(40, 3000)
    msgs.insert(len(msgs) - 1, {"role": "user", "content": " "})
    msgs.insert(len(msgs), {"role": "user", "content": "real question"})
    msgs[-2], msgs[-1] = msgs[-1], msgs[-2]
    r = await engine().compress(msgs)
    assert all((m.get("content") or "x").strip() or m.get("tool_calls") for m in r.messages if m["role"] == "user")


async def test_compression_secrets_redacted_to_and_from_summarizer():
    key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX123456"
    summ = FakeSummarizer(reply="## Critical Context\nDB password: hunter2hunter2 and key " + key)
    msgs = conversation(40, 3000)
    msgs[6] = {**msgs[6], "content": f"export OPENAI_API_KEY={key}\n" + "y" * 3000}
    msgs[5] = {**msgs[5], "content": f"use Authorization: Bearer {key[3:]} please"}
    r = await engine(summ).compress(msgs)
    sent = json.dumps(summ.requests)
    assert key not in sent and key[3:] not in sent and "[REDACTED]" in sent
    assert "hunter2hunter2" not in r.summary and key not in r.summary
    assert "[REDACTED]" in r.summary


async def test_compression_think_blocks_stripped_and_skill_markers_restored():
    marker = "[SKILL_PRUNED: deploy-k8s v2 — reload before use]"
    summ = FakeSummarizer(reply="<think>private chain of thought</think>## Goal\nship it\n## Pruned Skills\n- deploy k8s")
    msgs = conversation(40, 3000)
    msgs[7] = {**msgs[7], "content": marker}
    r = await engine(summ).compress(msgs)
    assert "private chain of thought" not in r.summary
    assert marker in r.summary and "- deploy k8s" not in r.summary


async def test_compression_prompt_has_template_date_focus_and_memory():
    summ = FakeSummarizer()
    await engine(summ).compress(
        conversation(40, 3000), focus="database migration", memory_context="user likes tabs; token=abcdef123456"
    )
    prompt = summ.last_prompt
    for section in ("Historical Task Snapshot", "Constraints & Preferences", "Completed Actions",
                    "Active State", "Blocked", "Key Decisions", "Resolved Questions",
                    "Relevant Files", "Critical Context", "Pruned Skills"):
        assert f"## {section}" in prompt
    assert "2026-05-28" in prompt and "database migration" in prompt
    assert "user likes tabs" in prompt and "abcdef123456" not in prompt
    assert summ.max_tokens[-1] <= 12_000


async def test_compression_preview_changes_nothing():
    summ = FakeSummarizer()
    msgs = conversation(40, 3000)
    r = await engine(summ).compress(msgs, preview=True)
    assert r.status == "preview" and summ.requests == []
    assert strip_cache(r.messages) == strip_cache(msgs)
    assert r.summarized_messages > 0 and r.details["tail"] > 0 and r.summarizer_calls >= 1


async def test_compression_keep_last_turns():
    r = await engine().compress(conversation(40, 3000), keep_last_turns=2, force=True)
    idx = next(i for i, m in enumerate(r.messages) if m.get(COMPRESSED_SUMMARY_KEY))
    tail = r.messages[idx + 1 :]
    assert [m["content"] for m in tail if m["role"] == "user"] == ["please run step 38", "please run step 39"]


async def test_compression_pressure_pass_trims_huge_tail_output():
    msgs = conversation(30, 1000)
    msgs += tool_turn(99, "z" * 300_000 + "\nexit_code: 1\nFAILED at the end")
    r = await engine().compress(msgs)
    big = [m for m in r.messages if m.get("tool_call_id") == "call_99"][0]["content"]
    assert len(big) < 5_000 and big.endswith("FAILED at the end") and "trimmed" in big


async def test_compression_orphan_tool_result_sanitized():
    msgs = conversation(40, 3000)
    msgs.insert(len(msgs) - 1, {"role": "tool", "tool_call_id": "ghost", "content": "stray"})
    r = await engine().compress(msgs)
    assert all(m.get("tool_call_id") != "ghost" for m in r.messages)
    assert tool_pairs_intact(r.messages)


def test_compression_load_engine_default_and_unknown():
    eng = load_engine(None, context_length=64_000)
    assert isinstance(eng, ContextCompressor) and eng.select_context([1]) == [1]
    with pytest.raises(LookupError):
        load_engine("no-such-engine", context_length=64_000)


def test_compression_role_collision_moves_cut_to_a_bridge():
    from agent_core.compression.boundaries import plan_layout

    roles = ["user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"]
    msgs = [{"role": "system", "content": "s"}] + [{"role": r, "content": f"{r} {i}"} for i, r in enumerate(roles)]
    # head = system + 3 (ends with a user message); a tail starting with an assistant would
    # force user|summary|assistant to collide whatever the summary's role
    layout = plan_layout(msgs, 4, 6)
    assert layout is not None and layout.cut == 5 and msgs[5]["role"] == "user"
    assert layout.summary_role == "assistant" and not layout.continuation
