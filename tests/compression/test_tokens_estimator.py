"""Token estimator: plausible counts per character class, caching, incremental tally."""

from __future__ import annotations

from agent_core.tokens import (
    ESTIMATOR,
    TOKEN_CACHE_KEY,
    TokenTally,
    estimate_message,
    estimate_messages,
    estimate_text,
)


def test_tokens_estimator_is_named_heuristic():
    assert ESTIMATOR.startswith("heuristic")


def test_tokens_english_prose_about_four_chars_per_token():
    text = "The quick brown fox jumps over the lazy dog. " * 100
    assert 900 <= estimate_text(text) <= 1300


def test_tokens_cjk_counts_about_one_per_character():
    text = "压缩不删除历史记录" * 100
    assert 800 <= estimate_text(text) <= 1100


def test_tokens_json_is_denser_than_prose():
    prose = "word " * 400
    dense = '{"a":1,"b":[1,2,3]}' * 100
    assert estimate_text(dense) / len(dense) > estimate_text(prose) / len(prose)


def test_tokens_huge_text_is_scaled_from_sample():
    small = "alpha beta gamma delta " * 50
    assert abs(estimate_text(small * 100) - 100 * estimate_text(small)) < 0.1 * 100 * estimate_text(small)


def test_tokens_message_counts_tool_calls_and_images():
    plain = {"role": "assistant", "content": "ok"}
    with_call = {
        "role": "assistant",
        "content": "ok",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls -la /srv"}'}}
        ],
    }
    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:..."}}]}
    assert estimate_message(with_call) > estimate_message(plain)
    assert estimate_message(image) >= 1600


def test_tokens_cache_is_reused_and_invalidated_on_change():
    msg = {"role": "tool", "tool_call_id": "x", "content": "abc " * 1000}
    first = estimate_message(msg)
    assert msg[TOKEN_CACHE_KEY][1] == first
    msg[TOKEN_CACHE_KEY] = (msg[TOKEN_CACHE_KEY][0], 7, ESTIMATOR)  # cached value is trusted
    assert estimate_message(msg) == 7
    msg["content"] = "abc " * 10  # a size change invalidates it
    assert estimate_message(msg) < first and estimate_message(msg) != 7


def test_tokens_cache_can_be_bypassed():
    msg = {"role": "user", "content": "hello there"}
    estimate_message(msg, cache=False)
    assert TOKEN_CACHE_KEY not in msg


def test_tokens_tally_only_counts_appended_messages():
    msgs = [{"role": "user", "content": f"message {i} " * 20} for i in range(50)]
    tally = TokenTally()
    total = tally.estimate(msgs)
    assert total == estimate_messages(msgs)
    new = [{"role": "assistant", "content": "fresh " * 30} for _ in range(3)]
    msgs.extend(new)
    msgs[0][TOKEN_CACHE_KEY] = (msgs[0][TOKEN_CACHE_KEY][0], 10**6, ESTIMATOR)
    # the poisoned cache entry of an old message is not re-read: only the new ones are
    assert tally.estimate(msgs) == total + estimate_messages(new)
    assert tally.estimate(list(msgs[1:])) < 10**6  # a different history is re-summed
