"""hermes_common.redact: the union of every secret shape, registered and passed-in values."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes_common.redact import (
    REDACTED,
    clear_registered_secrets,
    is_secret_name,
    redact,
    redact_value,
    register_environment,
    register_secret,
    register_secrets,
)
from tests.common.secret_shapes import ENV_NAME, ENV_VALUE, REGISTERED, SHAPES, Shape


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    clear_registered_secrets()
    yield
    clear_registered_secrets()


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_every_known_shape_is_redacted_and_redaction_is_idempotent(shape: Shape) -> None:
    out = redact(shape.text)
    assert shape.secret not in out
    assert REDACTED in out
    assert redact(out) == out


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_every_shape_is_redacted_inside_a_repr_and_a_json_string(shape: Shape) -> None:
    import json

    for wrapped in (repr({"error": {"message": shape.text}}), json.dumps({"m": shape.text})):
        assert shape.secret not in redact(wrapped), wrapped


def test_what_stays_readable() -> None:
    assert redact("bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw") == (
        "bot 123456789:[REDACTED]")  # the public bot id stays
    assert redact("https://admin:pw123456@host/x") == "https://admin:[REDACTED]@host/x"
    assert redact('{"api_key": "abcd1234efgh"}') == '{"api_key": "[REDACTED]"}'  # still JSON
    assert redact("Authorization: Bearer abcdefghijklmnop") == "Authorization: Bearer [REDACTED]"
    assert redact("?sig=abcdefgh&x=1") == "?sig=[REDACTED]&x=1"


@pytest.mark.parametrize("text", [
    "The task-runner-something-longer printed 12345678 lines; the key points: tokens are cheap",
    "mask-ABCDEFGHIJKLMNOPQRSTUV and sk-learn",
    "session_key=telegram:dm:42 cache_key: abcdef sort_key=name",
    "some basic things, Basic Usage and a bearer bond",
    "12:30:00 and 12345:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
    "https://example.com/docs?page=2&q=tokens",
])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_registered_and_passed_in_values_whatever_their_shape() -> None:
    assert redact(f"x {REGISTERED} y") == f"x {REGISTERED} y"
    register_secret(REGISTERED)
    register_secrets(["short", None, ""])  # too short or empty: ignored
    assert redact(f"x {REGISTERED} y") == f"x {REDACTED} y"
    assert redact("a short note") == "a short note"
    assert redact("owner odd-provider-credential!", ["odd-provider-credential", "tiny"]) == (
        f"owner {REDACTED}!")


def test_a_value_registered_later_is_redacted_in_text_seen_before() -> None:
    text = f"upstream said {REGISTERED}"
    assert redact(text) == text  # remembered as clean (short texts are memoized)
    register_secret(REGISTERED)
    assert redact(text) == f"upstream said {REDACTED}"
    clear_registered_secrets()
    assert redact(text) == text


def test_secret_named_environment_variables_are_registered() -> None:
    register_environment({ENV_NAME: ENV_VALUE, "HOME": "/home/someone", "MAX_TOKENS": "4096",
                          "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMIK7MDENGbPxRfiCY"})
    assert redact(f"saw {ENV_VALUE}") == f"saw {REDACTED}"
    assert redact("saw wJalrXUtnFEMIK7MDENGbPxRfiCY") == f"saw {REDACTED}"
    assert redact("in /home/someone with 4096") == "in /home/someone with 4096"


@pytest.mark.parametrize(("name", "secret"), [
    ("token", True), ("bot_token", True), ("api_keys", True), ("OPENAI_API_KEY", True),
    ("SLACK_SIGNING_SECRET", True), ("private_key", True), ("password", True),
    ("session_key", False), ("max_tokens", False), ("model", False), (None, False),
])
def test_secret_names(name: object, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_redact_value_walks_structures() -> None:
    data = {"token": "abc", "empty_token": "", "nested": [{"url": "https://u:pw123456@h/"}],
            "pair": ("sk-proj-ABCDEFGHIJKL", 3), "n": 5}
    assert redact_value(data) == {
        "token": REDACTED, "empty_token": "", "nested": [{"url": "https://u:[REDACTED]@h/"}],
        "pair": [REDACTED, 3], "n": 5}
    assert redact_value("odd-value-123456", secrets=["odd-value-123456"]) == REDACTED


secretish = st.sampled_from([s.text for s in SHAPES])
filler = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


@given(parts=st.lists(st.one_of(secretish, filler), max_size=6))
def test_redaction_is_idempotent_and_never_raises(parts: list[str]) -> None:
    text = " ".join(parts)
    once = redact(text)
    assert redact(once) == once


@given(parts=st.lists(st.tuples(filler, st.sampled_from(SHAPES)), min_size=1, max_size=4))
def test_shapes_embedded_in_any_text_never_survive(parts: list[tuple[str, Shape]]) -> None:
    text = "\n".join(f"{noise} {shape.text} " for noise, shape in parts)
    out = redact(text)
    for _noise, shape in parts:
        assert shape.secret not in out
