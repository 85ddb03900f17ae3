"""Credential redaction: what reaches the summarizer, and what a summary may contain."""

from __future__ import annotations

import pytest

from agent_core.compression import redact

SECRETS = [
    ("export OPENAI_API_KEY=sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX123456", "sk-proj-ABCDEFGHIJKLMNOP"),
    ("stripe sk_live_abcdefghij1234 here", "abcdefghij1234"),
    ("publishable pk_test_ZZZZZZZZZZZZ here", "ZZZZZZZZZZZZ"),
    ("google AIzaSyA1234567890abcdefghijklmnopqrstu end", "AIzaSyA1234567890"),
    ("aws AKIAIOSFODNN7EXAMPLE and more", "AKIAIOSFODNN7EXAMPLE"),
    ("github ghp_abcdefghijklmnopqrstuvwxyz0123 ok", "ghp_abcdefghijklmnop"),
    ("pat github_pat_11ABCDEFG0123456789_abcdefghij ok", "11ABCDEFG0123456789"),
    ("slack xoxb-1234567890-abcdefghij ok", "xoxb-1234567890"),
    ("bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1 ok", "AAHdqTcvCH1vGWJxfSeofSAs0K5"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9P",
        "dozjgNryP4J3jVmNHl0w5N",
    ),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "MIIEow"),
    ("line\n" + "Ab+/" * 16 + "\nnext", "Ab+/Ab+/Ab+/"),
    ("db postgres://admin:s3cretpass@db.example.com/x", "s3cretpass"),
    ('{"api_key": "abcd1234efgh", "other": 1}', "abcd1234efgh"),
    ("Token: zzzz9999 and PASSWORD='hunter22'", "zzzz9999"),
    ("PASSWORD='hunter22' then", "hunter22"),
    ("Authorization: Bearer abcdefghijklmnopqrstuvwx==", "abcdefghijklmnopqrstuvwx"),
    ("credentials=foo/bar/baz pwd=xyzw", "foo/bar/baz"),
    ("tâche ünïcödé password: geheim123", "geheim123"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_redaction_removes_each_kind_of_credential(text: str, secret: str):
    out = redact(text)
    assert secret not in out
    assert "[REDACTED]" in out
    assert redact(out) == out  # idempotent


def test_redaction_keeps_key_names_and_url_users():
    out = redact('api_key="abcd1234efgh" at https://admin:pw123456@host/x')
    assert out.startswith("api_key=")
    assert "https://admin:[REDACTED]@host/x" in out


def test_redaction_leaves_ordinary_text_alone():
    text = (
        "The task-runner-something-longer printed 12345678 lines; the key points: tokens are "
        "cheap, see https://example.com/docs and tests/test_compression_pipeline.py\n" * 20
    )
    assert redact(text) == text


def test_redaction_word_boundaries_are_respected():
    # a key-shaped word glued to other letters is not a key, one after a dash is
    assert redact("mask-ABCDEFGHIJKLMNOPQRSTUV") == "mask-ABCDEFGHIJKLMNOPQRSTUV"
    assert "REALKEY" not in redact("disk-abc-sk-REALKEY1234567890abcd")
    # a telegram-shaped token needs a bot id of 6 digits or more (the one redaction module
    # takes the log side's rule: any such id, glued to `bot` in an API URL too); the id stays
    long_id = "123456789012:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
    assert redact(long_id) == "123456789012:[REDACTED]"
    assert redact(f"/bot{long_id}/getMe") == "/bot123456789012:[REDACTED]/getMe"
    short_id = "12345:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
    assert redact(short_id) == short_id


def test_redaction_overlapping_matches_leave_nothing_behind():
    text = "password=sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX123456 and key: 'abcdefgh'x"
    out = redact(text)
    assert "ABCDEFGHIJ" not in out and "abcdefgh" not in out
    assert redact(out) == out
