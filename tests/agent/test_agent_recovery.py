"""Error recovery: key rotation, backoff, fallback, compression signal — seen at the wire."""

from __future__ import annotations

from agent_core.errors import FailoverReason
from agent_core.events import CompressionNeeded, Error, Final, Status
from agent_core.messages import validate
from tests.agent.doubles import collect, make_agent, settings, terminal
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    call,
    content_policy,
    context_overflow,
    hang,
    insufficient_quota,
    invalid_api_key,
    payment_required,
    rate_limited,
    server_error,
    stream_error,
    text,
    tool_calls,
)

KEYS = ("sk-first-aaaaaaaaaaaa", "sk-second-bbbbbbbbbbb")


async def test_429_twice_rotates_to_the_second_key(fake_openai: FakeOpenAIServer):
    fake_openai.enqueue(rate_limited(retry_after=0), rate_limited(retry_after=0), text("hi"))
    agent, _ = make_agent([settings(fake_openai, keys=KEYS)])
    events = await collect(agent.run_turn([], "hello"))
    assert isinstance(terminal(events), Final)
    assert fake_openai.keys_used() == [KEYS[0], KEYS[0], KEYS[1]]
    kinds = [e.kind for e in events if isinstance(e, Status)]
    assert kinds == ["retrying", "rotating_key"]
    # the rested key is not used again while it cools down
    terminal(await collect(agent.run_turn([], "again")))
    assert fake_openai.keys_used()[-1] == KEYS[1]


async def test_402_rotates_at_once_and_the_key_stays_out(fake_openai: FakeOpenAIServer):
    fake_openai.enqueue(payment_required())
    agent, _ = make_agent([settings(fake_openai, keys=KEYS)])
    assert isinstance(terminal(await collect(agent.run_turn([], "one"))), Final)
    for n in ("two", "three"):
        assert isinstance(terminal(await collect(agent.run_turn([], n))), Final)
    assert fake_openai.keys_used() == [KEYS[0], KEYS[1], KEYS[1], KEYS[1]]


async def test_insufficient_quota_429_is_billing_not_a_retry(fake_openai: FakeOpenAIServer):
    fake_openai.enqueue(insufficient_quota())
    agent, _ = make_agent([settings(fake_openai, keys=KEYS)])
    assert isinstance(terminal(await collect(agent.run_turn([], "x"))), Final)
    assert fake_openai.keys_used() == [KEYS[0], KEYS[1]]


async def test_three_500s_then_the_fallback_provider_answers(fake_openai: FakeOpenAIServer):
    async with FakeOpenAIServer(model="backup-model") as backup:
        fake_openai.enqueue(server_error(), server_error(502), server_error())
        backup.enqueue(text("from backup"))
        agent, _ = make_agent([settings(fake_openai, max_retries=2),
                               settings(backup, name="backup", keys=("sk-backup-cccccccc",))])
        events = await collect(agent.run_turn([], "hello"))
        final = terminal(events)
        assert isinstance(final, Final) and final.text == "from backup"
        assert len(fake_openai.requests) == 3 and len(backup.requests) == 1
        assert backup.requests[0].api_key == "sk-backup-cccccccc"
        kinds = [e.kind for e in events if isinstance(e, Status)]
        assert kinds == ["retrying", "retrying", "fallback"]


async def test_server_errors_without_fallback_end_in_a_classified_error(fake_openai: FakeOpenAIServer):
    fake_openai.enqueue(*[server_error()] * 3)
    agent, _ = make_agent([settings(fake_openai, max_retries=2)])
    err = terminal(await collect(agent.run_turn([], "x")))
    assert isinstance(err, Error)
    assert err.error.reason is FailoverReason.SERVER_ERROR and err.error.status_code == 500
    assert len(fake_openai.requests) == 3


async def test_content_policy_goes_straight_to_fallback(fake_openai: FakeOpenAIServer):
    async with FakeOpenAIServer() as backup:
        fake_openai.enqueue(content_policy())
        backup.enqueue(text("backup is fine"))
        agent, _ = make_agent([settings(fake_openai), settings(backup, name="b")])
        final = terminal(await collect(agent.run_turn([], "x")))
        assert isinstance(final, Final) and final.text == "backup is fine"
        assert len(fake_openai.requests) == 1


async def test_context_overflow_asks_the_caller_to_compress_then_continue(
    fake_openai: FakeOpenAIServer,
):
    fake_openai.enqueue(tool_calls(call("echo", {"a": 1})), context_overflow())
    agent, _ = make_agent([settings(fake_openai)])
    history = [{"role": "user", "content": "old " * 50}, {"role": "assistant", "content": "ok"}]
    events = await collect(agent.run_turn(history, "do it"))
    need = terminal(events)
    assert isinstance(need, CompressionNeeded)
    assert need.reason is FailoverReason.CONTEXT_OVERFLOW
    assert [m["role"] for m in need.messages] == ["assistant", "tool"]
    assert len(fake_openai.requests) == 2  # no blind retry of an oversized request
    # the caller compresses (here: drops the old exchange) and continues the same turn
    compressed = [{"role": "user", "content": "[CONTEXT COMPACTION] summary"},
                  {"role": "assistant", "content": "noted"},
                  {"role": "user", "content": "do it"}, *need.messages]
    fake_openai.enqueue(text("finished after compaction"))
    final = terminal(await collect(agent.run_turn(compressed, None)))
    assert isinstance(final, Final) and final.text == "finished after compaction"
    sent = fake_openai.requests[-1].body["messages"]
    assert sent[1]["content"] == "[CONTEXT COMPACTION] summary" and validate(sent) == []


async def test_401_parks_the_key_and_errors_never_show_keys(fake_openai: FakeOpenAIServer):
    fake_openai.enqueue(invalid_api_key())
    agent, _ = make_agent([settings(fake_openai, keys=KEYS)])
    assert isinstance(terminal(await collect(agent.run_turn([], "x"))), Final)
    assert fake_openai.keys_used() == [KEYS[0], KEYS[1]]
    fake_openai.enqueue(invalid_api_key(revoked=True))
    err = terminal(await collect(agent.run_turn([], "y")))
    assert isinstance(err, Error) and err.error.is_auth
    assert fake_openai.keys_used()[-1] == KEYS[1]
    assert all(k not in err.error.message for k in KEYS)
    later = terminal(await collect(agent.run_turn([], "z")))
    assert isinstance(later, Error)
    assert len(fake_openai.requests) == 3  # no key left: nothing was sent


async def test_in_stream_error_resets_the_stream_and_retries(fake_openai: FakeOpenAIServer):
    fake_openai.enqueue(stream_error("partial words"), text("complete answer"))
    agent, _ = make_agent([settings(fake_openai)])
    events = await collect(agent.run_turn([], "x"))
    final = terminal(events)
    assert isinstance(final, Final) and final.text == "complete answer"
    kinds = [e.kind for e in events if isinstance(e, Status)]
    assert kinds == ["stream_reset", "retrying"]


async def test_single_key_rate_limit_backs_off_on_the_same_key(fake_openai: FakeOpenAIServer):
    fake_openai.enqueue(rate_limited(), rate_limited(), text("finally"))
    agent, _ = make_agent([settings(fake_openai, max_retries=2)])
    final = terminal(await collect(agent.run_turn([], "x")))
    assert isinstance(final, Final) and final.text == "finally"
    assert fake_openai.keys_used() == ["sk-test-one"] * 3


async def test_request_timeout_moves_on_to_the_fallback(fake_openai: FakeOpenAIServer):
    async with FakeOpenAIServer() as backup:
        fake_openai.enqueue(hang())
        backup.enqueue(text("backup answered"))
        agent, _ = make_agent([settings(fake_openai, timeout_s=0.3, max_retries=0),
                               settings(backup, name="backup")])
        events = await collect(agent.run_turn([], "x"))
        final = terminal(events)
        assert isinstance(final, Final) and final.text == "backup answered"
        fallback = [e for e in events if isinstance(e, Status) and e.kind == "fallback"]
        assert len(fallback) == 1 and "timeout" in fallback[0].message
