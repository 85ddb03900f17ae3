"""Untrusted regular expressions run in linear time, or are refused with a clear reason."""

from __future__ import annotations

import re
import time

import pytest

from hermes_common.patterns import MAX_PATTERN_CHARS, PatternError, compile_untrusted


@pytest.mark.parametrize("pattern, text", [
    (r"(a+)+$", "a" * 40 + "!"),
    (r"(a|aa)+$", "a" * 40 + "!"),
    (r"(.*a){20}", "a" * 40),
    (r"^(\w+\s?)*$", "word " * 30 + "!"),
])
def test_catastrophic_patterns_answer_at_once(pattern: str, text: str) -> None:
    compiled = compile_untrusted(pattern)
    started = time.perf_counter()
    compiled.search(text * 100)
    # `re` needs minutes to hours for these; RE2 is linear (generous bound for a busy CI).
    assert time.perf_counter() - started < 0.5


def test_flags_and_literals() -> None:
    assert compile_untrusted("HELLO", ignore_case=True).search("say hello")
    assert not compile_untrusted("HELLO").search("say hello")
    assert not compile_untrusted("a.c", literal=True).search("abc")
    assert compile_untrusted("a.c", literal=True).search("a.c and (")
    assert compile_untrusted("(", literal=True).search("f(x)")


@pytest.mark.parametrize("pattern, reason", [
    (r"(a)\1", "backreferences and lookaround"),
    (r"(?=x)y", "backreferences and lookaround"),
    ("(", "missing )"),
    ("a" * (MAX_PATTERN_CHARS + 1), "longer than"),
])
def test_refused_with_a_reason(pattern: str, reason: str, capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(PatternError, match=re.escape(reason)):
        compile_untrusted(pattern)
    assert capfd.readouterr().err == ""  # RE2 itself prints nothing to the daemon's stderr
