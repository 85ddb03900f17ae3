"""Regular expressions from untrusted sources (the model, a chat user): linear time.

Python's `re` backtracks: a pattern such as `(a+)+$` on a short line takes exponential time
while holding the GIL, and the whole daemon (its health endpoint included) stops answering.
Patterns that come from outside are compiled with RE2 instead, whose matching time is linear
in the text and whose memory is capped. RE2 has no backreferences and no lookaround; such a
pattern is refused with a clear error rather than run slowly.
"""

from __future__ import annotations

import re2

__all__ = ["MAX_PATTERN_CHARS", "PatternError", "UntrustedPattern", "compile_untrusted"]

MAX_PATTERN_CHARS = 2000
#: RE2's budget for the compiled program and its DFA cache, per pattern.
MAX_PATTERN_MEMORY = 8 * 1024 * 1024


class PatternError(ValueError):
    """The pattern cannot be used; the message says why and is safe to show."""


class UntrustedPattern:
    """A compiled untrusted pattern. `search` runs in time linear in `text`."""

    __slots__ = ("_compiled", "source")

    def __init__(self, compiled: re2._Regexp, source: str) -> None:
        self._compiled = compiled
        self.source = source

    def search(self, text: str) -> bool:
        return self._compiled.search(text) is not None


def compile_untrusted(pattern: str, *, ignore_case: bool = False,
                      literal: bool = False) -> UntrustedPattern:
    """Compile `pattern` (RE2 syntax; `literal`: match the text as it is). Raises
    `PatternError` for a pattern that is too long, invalid, uses backreferences or
    lookaround, or needs more than `MAX_PATTERN_MEMORY`."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.literal = literal
    options.log_errors = False  # RE2 would print to stderr; the error is raised instead
    options.max_mem = MAX_PATTERN_MEMORY
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(
            exc.args[0], bytes) else str(exc)
        hint = (" (backreferences and lookaround are not supported)"
                if any(t in pattern for t in ("(?=", "(?!", "(?<", "\\1", "\\2")) else "")
        raise PatternError(f"invalid regular expression: {reason}{hint}") from None
    return UntrustedPattern(compiled, pattern)
