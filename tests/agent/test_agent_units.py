"""Pure pieces of the agent core: classifier, credential pool, budget, message repair."""

from __future__ import annotations

import httpx2
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.budget import IterationBudget
from agent_core.credentials import CredentialPool, KeyState
from agent_core.errors import FailoverReason, classify
from agent_core.messages import repair, validate

REQ = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")


def status_error(status: int, message: str, code: str | None = None, headers=None):
    body = {"message": message, "type": "x", "code": code}
    resp = httpx2.Response(status, headers=headers or {}, request=REQ, json={"error": body})
    cls = {400: openai.BadRequestError, 401: openai.AuthenticationError,
           429: openai.RateLimitError}.get(status, openai.APIStatusError)
    if status >= 500:
        cls = openai.InternalServerError
    return cls(f"Error code: {status} - {message}", response=resp, body=body)


@pytest.mark.parametrize(("exc", "reason", "flags"), [
    (status_error(429, "Rate limit reached", "rate_limit_exceeded", {"retry-after": "7"}),
     FailoverReason.RATE_LIMIT, (True, False, True, True)),
    (status_error(429, "You exceeded your current quota", "insufficient_quota"),
     FailoverReason.BILLING, (False, False, True, True)),
    (status_error(402, "Insufficient credits"), FailoverReason.BILLING, (False, False, True, True)),
    (status_error(401, "Incorrect API key provided", "invalid_api_key"), FailoverReason.AUTH,
     (False, False, True, True)),
    (status_error(401, "This key has been revoked"), FailoverReason.AUTH_PERMANENT,
     (False, False, True, True)),
    (status_error(400, "maximum context length is 8192 tokens", "context_length_exceeded"),
     FailoverReason.CONTEXT_OVERFLOW, (True, True, False, False)),
    (status_error(400, "prompt is too long: 210000 tokens > 200000 maximum"),
     FailoverReason.CONTEXT_OVERFLOW, (True, True, False, False)),
    (status_error(413, "Request Entity Too Large"), FailoverReason.PAYLOAD_TOO_LARGE,
     (True, True, False, False)),
    (status_error(500, "The server had an error"), FailoverReason.SERVER_ERROR,
     (True, False, False, True)),
    (status_error(503, "Service Unavailable"), FailoverReason.OVERLOADED, (True, False, False, True)),
    (status_error(404, "The model `gpt-9` does not exist", "model_not_found"),
     FailoverReason.MODEL_NOT_FOUND, (False, False, False, True)),
    (status_error(400, "Your request was flagged by our safety system"),
     FailoverReason.CONTENT_POLICY_BLOCKED, (False, False, False, True)),
    (status_error(400, "Unknown parameter: 'foo'"), FailoverReason.FORMAT_ERROR,
     (False, False, False, True)),
    (openai.APITimeoutError(REQ), FailoverReason.TIMEOUT, (True, False, False, True)),
    (openai.APIConnectionError(request=REQ), FailoverReason.TIMEOUT, (True, False, False, True)),
    (openai.APIError("upstream connection lost", REQ, body={"message": "upstream connection lost"}),
     FailoverReason.SERVER_ERROR, (True, False, False, True)),
    (ValueError("certificate verify failed"), FailoverReason.SSL_ERROR, (False, False, False, True)),
    (RuntimeError("weird"), FailoverReason.UNKNOWN, (True, False, False, False)),
])
def test_classify(exc, reason, flags):
    err = classify(exc)
    assert err.reason is reason
    assert (err.retryable, err.should_compress, err.should_rotate_credential,
            err.should_fallback) == flags


def stream_error(message: str, code: str | None = None) -> openai.APIError:
    """An error event inside a stream: no HTTP status, only a body."""
    return openai.APIError(message, REQ, body={"message": message, "code": code})


R_ = FailoverReason


@pytest.mark.parametrize(("exc", "kw", "reason", "flags"), [
    (status_error(400, "stream is not supported for this model"), {}, R_.STREAM_UNSUPPORTED,
     (True, False, False, False)),
    (status_error(403, "You have reached your spending limit"), {}, R_.BILLING,
     (False, False, True, True)),
    (status_error(403, "Forbidden: project has no access"), {}, R_.AUTH,
     (False, False, False, True)),
    (status_error(402, "Weekly usage limit reached, resets Monday; try again later"), {},
     R_.RATE_LIMIT, (True, False, True, True)),
    (status_error(404, "Insufficient balance on this account"), {}, R_.BILLING,
     (False, False, True, True)),
    (status_error(429, "Overloaded"), {}, R_.OVERLOADED, (True, False, False, True)),
    (status_error(429, "Provider returned error"), {"provider": "openrouter"},
     R_.UPSTREAM_RATE_LIMIT, (True, False, False, True)),
    (status_error(408, "Request Timeout"), {}, R_.TIMEOUT, (True, False, False, True)),
    (status_error(529, "Overloaded"), {}, R_.OVERLOADED, (True, False, False, True)),
    (status_error(500, "input is too long for the model's context window"), {},
     R_.CONTEXT_OVERFLOW, (True, True, False, False)),
    (status_error(422, "Unknown model: llama-9"), {}, R_.MODEL_NOT_FOUND,
     (False, False, False, True)),
    (status_error(400, "Bad request"), {"approx_tokens": 90_000, "context_length": 100_000},
     R_.CONTEXT_OVERFLOW, (True, True, False, False)),
    (status_error(400, "Bad request"), {"approx_tokens": 1_000, "context_length": 100_000},
     R_.FORMAT_ERROR, (False, False, False, True)),
    (status_error(418, "I'm a teapot"), {}, R_.FORMAT_ERROR, (False, False, False, True)),
    (stream_error("credits exhausted", "no_usable_credits"), {}, R_.BILLING,
     (False, False, True, True)),
    (stream_error("上下文长度超过限制"), {}, R_.CONTEXT_OVERFLOW, (True, True, False, False)),
    (stream_error("Rate limit exceeded: tokens per min"), {}, R_.RATE_LIMIT,
     (True, False, True, True)),
    (stream_error("invalid api key", "invalid_api_key"), {}, R_.AUTH,
     (False, False, True, True)),
    (stream_error("server is busy, please retry"), {}, R_.OVERLOADED,
     (True, False, False, True)),
    (openai.APIConnectionError(request=REQ), {"approx_tokens": 90_000, "context_length": 100_000},
     R_.CONTEXT_OVERFLOW, (True, True, False, False)),
])
def test_classify_more_provider_shapes(exc, kw, reason, flags):
    err = classify(exc, **kw)
    assert err.reason is reason
    assert (err.retryable, err.should_compress, err.should_rotate_credential,
            err.should_fallback) == flags


@pytest.mark.parametrize(("exc", "expected"), [
    (status_error(429, "slow down", None, {"retry-after": "12"}), 12.0),
    (status_error(429, "Rate limit reached. Please try again in 250ms."), 0.25),
    (status_error(429, "Rate limit reached, retry after 3 seconds"), 3.0),
    (status_error(429, "slow down", None, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}), 0.0),
])
def test_retry_after_from_headers_and_message_text(exc, expected):
    assert classify(exc).retry_after == pytest.approx(expected)


def test_a_code_nested_in_a_json_message_is_found():
    inner = '{"error": {"code": "context_length_exceeded", "message": "too big"}}'
    body = {"message": inner}  # a proxy wrapping the upstream error as text
    resp = httpx2.Response(400, request=REQ, json={"error": body})
    err = classify(openai.BadRequestError("Error code: 400", response=resp, body=body))
    assert err.code == "context_length_exceeded" and err.reason is R_.CONTEXT_OVERFLOW


def test_retry_after_header_and_secret_redaction():
    exc = status_error(429, "Rate limit for key sk-live-abcdefghijkl reached", None,
                       {"retry-after-ms": "1500"})
    err = classify(exc, secrets=("sk-live-abcdefghijkl",))
    assert err.retry_after == 1.5
    assert "sk-live" not in err.message
    bearer = classify(status_error(401, "auth: Bearer abc.def.ghijklmn", None, {}))
    assert "abc.def.ghijklmn" not in bearer.message


def test_pool_fill_first_round_robin_and_cooldowns():
    now = [0.0]
    pool = CredentialPool(["k1", "k2", "k3"], strategy="round_robin", clock=lambda: now[0])
    assert [pool.select().key for _ in range(4)] == ["k1", "k2", "k3", "k1"]
    ff = CredentialPool(["k1", "k2"], clock=lambda: now[0])
    k1 = ff.select()
    assert ff.select() is k1
    ff.report_failure(k1, classify(status_error(402, "Insufficient credits")))
    assert ff.select().key == "k2"
    now[0] = 3599.0
    assert ff.select().key == "k2"
    now[0] = 3601.0
    assert ff.select().key == "k1"  # cooldown over


def test_revoked_and_twice_rejected_keys_never_return():
    now = [0.0]
    pool = CredentialPool(["k1", "k2"], clock=lambda: now[0])
    k1, k2 = pool.credentials
    assert pool.report_failure(k1, classify(status_error(401, "key revoked"))) is KeyState.DEAD
    auth = classify(status_error(401, "Incorrect API key provided", "invalid_api_key"))
    assert pool.report_failure(k2, auth) is KeyState.EXHAUSTED
    now[0] = 10_000.0
    assert pool.select() is k2
    assert pool.report_failure(k2, auth) is KeyState.DEAD
    now[0] = 1e9
    assert pool.select() is None and pool.next_ready_in() is None


def test_budget_consume_and_refund_rule():
    b = IterationBudget(2)
    assert b.consume() and b.consume() and not b.consume()
    assert b.refund_for_batch(["execute_code", "execute_code"])
    assert not b.refund_for_batch(["execute_code", "read_file"])
    assert b.remaining == 1
    fresh = IterationBudget(3)
    fresh.refund()
    assert fresh.used == 0


_roles = st.sampled_from(["user", "assistant", "tool", "system"])
# Text as it arrives from platforms and tools: lone surrogates included.
_plain = st.text(max_size=5)
_text = st.one_of(_plain, st.builds(lambda a, lone, b: a + lone + b, _plain,
                                    st.characters(categories=("Cs",)), _plain))
_part = st.one_of(
    _text,
    st.fixed_dictionaries({"type": st.just("text"), "text": _text},
                          optional={"_cache": st.integers()}),
    st.fixed_dictionaries({"type": st.just("image_url"),
                           "image_url": st.just({"url": "data:image/png;base64,AAAA"})}),
)
_content = st.one_of(_text, st.none(), st.lists(_part, max_size=3), st.integers())
_call = st.one_of(
    st.builds(lambda i, args: {"id": i, "type": "function",
                               "function": {"name": "t", "arguments": args}},
              st.sampled_from(["a", "b", "c"]),
              st.one_of(st.just("{}"), st.just({"path": "x"}), _text)),
    st.sampled_from([{"id": "", "function": {"name": "t"}}, {"function": {}}, "not a call"]),
)
_msg = st.one_of(
    st.builds(
        lambda role, content, calls, ref: (
            {"role": role, "content": content,
             **({"tool_calls": calls} if role == "assistant" and calls else {}),
             **({"tool_call_id": ref} if role == "tool" else {}),
             "_meta": 1}
        ),
        _roles, _content, st.lists(_call, max_size=3), st.sampled_from(["a", "b", "c", "zz"]),
    ),
    st.sampled_from([None, "text", {"role": "developer", "content": "x"}, {"content": "x"}]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_msg, max_size=12))
def test_repair_always_yields_a_valid_deterministic_history(messages):
    fixed = repair(messages)
    assert repair(messages) == fixed
    assert validate(fixed) == []
    assert repair(fixed) == fixed


def test_a_wire_copy_is_the_callers_own_and_follows_every_field_that_is_sent():
    plain = {"role": "user", "content": "same text", "_id": 1}
    first = repair([plain])
    first[0]["content"] += " changed by a caller"
    assert repair([plain]) == [{"role": "user", "content": "same text"}]
    # the same text as tool results of two calls, and with a name: each its own copy
    calls = {"role": "assistant", "content": None, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "t", "arguments": "{}"}}
        for i in ("a", "b")]}
    got = repair([{"role": "user", "content": "go"}, calls,
                  {"role": "tool", "tool_call_id": "a", "content": "same text"},
                  {"role": "tool", "tool_call_id": "b", "content": "same text"},
                  {"role": "user", "content": "same text", "name": "alice"}])
    assert [m.get("tool_call_id") for m in got[2:4]] == ["a", "b"]
    assert got[4] == {"role": "user", "content": "same text", "name": "alice"}
    assert repair([{"role": "user", "content": "bad \ud800 half"}])[0]["content"] == \
        "bad \ufffd half"
