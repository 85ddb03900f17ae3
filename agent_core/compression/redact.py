"""Credential redaction for text sent to, and received from, the summarizer.

Covered: provider API keys (`sk-…`, `sk_live_…`, Google `AIza…`, AWS `AKIA…`, GitHub `ghp_…`
and `github_pat_…`, Slack `xox?-…`, Telegram bot tokens), JWTs, PEM private keys (whole blocks
and bare 64-column base64 body lines), credentials in URLs (`scheme://user:secret@host`),
`Bearer …` / `token …` / `Basic …` values, and `key=value` / `"key": "value"` pairs whose key
names a secret (password, token, api_key, secret, credentials, …). Each match becomes
`[REDACTED]`; key names and URL users stay so a summary can say a credential was present.

Speed (the summarizer input is redacted on every compression):

* Every pattern is compiled once and starts with a literal (boundary lookbehinds sit after
  it), so the regex engine jumps between occurrences of that literal at the speed of a
  substring search and Python code runs only for real matches; a separate substring gate would
  cost the same scan again. Text without credentials costs one literal scan per rule.
* Key names are matched case-insensitively on one lower-cased copy.
* Matches of all rules become spans, merged where they overlap; the text is rebuilt once.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["REDACTED", "redact"]

REDACTED = "[REDACTED]"

# A span is (start, keep_end, end, replacement): text[start:keep_end] stays and
# text[keep_end:end] is replaced by `replacement`.
_ToSpan = Callable[[str, re.Match[str]], tuple[int, int, int, str] | None]


def _whole(_text: str, m: re.Match[str]) -> tuple[int, int, int, str]:
    return (m.start(), m.start(), m.end(), REDACTED)


def _line(_text: str, m: re.Match[str]) -> tuple[int, int, int, str]:
    return (m.start(), m.start() + 1, m.end(), REDACTED)  # keeps the leading newline


def _prefixed(_text: str, m: re.Match[str]) -> tuple[int, int, int, str]:
    return (m.start() - 1, m.start() - 1, m.end(), REDACTED)  # `k-…`, `k_live_…` after s/p/r


def _url(_text: str, m: re.Match[str]) -> tuple[int, int, int, str]:
    return (m.start(), m.end(1), m.end(), ":" + REDACTED + "@")


def _telegram(text: str, m: re.Match[str]) -> tuple[int, int, int, str] | None:
    """`:AA…` after an 8-10 digit bot id that starts at a word boundary."""
    colon = start = m.start()
    while start > 0 and colon - start < 11 and text[start - 1].isdecimal():
        start -= 1
    if not 8 <= colon - start <= 10:
        return None
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        return None
    return (start, start, m.end(), REDACTED)


def _bounded(literal: str, rest: str) -> re.Pattern[str]:
    """`literal` not preceded by a word character, then `rest`."""
    return re.compile(f"{re.escape(literal)}(?<![A-Za-z0-9_]{re.escape(literal)}){rest}")


_KEY_TAIL = r"(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{16,}"
_LIVE = r"(?<=[spr]k_(?:live|test)_)(?<![A-Za-z0-9_][spr]k_(?:live|test)_)[A-Za-z0-9]{10,}"

# (pattern, span builder); each pattern starts with a literal the engine scans for
_CASED: tuple[tuple[re.Pattern[str], _ToSpan], ...] = (
    (
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)"
        ),
        _whole,
    ),
    (re.compile(r"\n[A-Za-z0-9+/]{64}(?=\n|\Z)"), _line),
    (re.compile(r"k-(?<=[spr]k-)(?<![A-Za-z0-9_][spr]k-)" + _KEY_TAIL), _prefixed),
    (re.compile(r"k_(?:live|test)_" + _LIVE), _prefixed),
    (_bounded("AIza", r"[0-9A-Za-z_\-]{30,}"), _whole),
    (re.compile(r"A(?:KIA|SIA)[0-9A-Z]{16}\b"), _whole),
    (_bounded("gh", r"[pousr]_[A-Za-z0-9]{20,}"), _whole),
    (re.compile(r"github_pat_[A-Za-z0-9_]{20,}"), _whole),
    (_bounded("xox", r"[abposr]-[A-Za-z0-9\-]{10,}"), _whole),
    (re.compile(r":AA(?<=[0-9]:AA)[A-Za-z0-9_\-]{30,}"), _telegram),
    (_bounded("eyJ", r"[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), _whole),
    (re.compile(r"(://[^\s:/@]+):[^\s@/]+@"), _url),
)
_FIRST_LINE_B64 = re.compile(r"[A-Za-z0-9+/]{64}(?=\n|\Z)")
_MAX_PASSES = 4
_STOP = frozenset(" \t\r\n\"',;}{)")

_VALUE = r"(?:\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"',;}{)]{4,})"
_SPACED = r"\s+[a-z0-9._~+/\-]{16,}=*"
_ASSIGNED = r"([\"']?\s*[:=]\s*)" + _VALUE
# Patterns on the lower-cased text. Group 1 is the key name; `keyword value` forms keep it and
# replace the rest by " [REDACTED]", `key: value` forms keep it plus group 2 (the separator) and
# replace the value.
_KEYWORD_RULES: tuple[re.Pattern[str], ...] = (
    re.compile(f"(bearer)(?<![a-z0-9_]bearer){_SPACED}"),
    re.compile(f"(basic)(?<![a-z0-9_]basic){_SPACED}"),
    re.compile(f"(token)(?:(?<![a-z0-9_]token){_SPACED}|{_ASSIGNED})"),
    re.compile(f"(key){_ASSIGNED}"),
    re.compile(f"(secret){_ASSIGNED}"),
    re.compile(f"(passw(?:or)?d){_ASSIGNED}"),
    re.compile(f"(pwd){_ASSIGNED}"),
    re.compile(f"(credentials?){_ASSIGNED}"),
)


def _lowered(text: str) -> str:
    """A lower-cased copy with the same length (characters whose lower case is longer stay)."""
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)
    return lowered


def _collect(text: str) -> list[tuple[int, int, int, str]]:
    spans: list[tuple[int, int, int, str]] = []
    for pattern, to_span in _CASED:
        for m in pattern.finditer(text):
            span = to_span(text, m)
            if span is not None:
                spans.append(span)
    if head := _FIRST_LINE_B64.match(text):
        spans.append(_whole(text, head))
    lowered = _lowered(text)
    for pattern in _KEYWORD_RULES:
        for m in pattern.finditer(lowered):
            if m.lastindex == 2:
                spans.append((m.start(), m.end(2), m.end(), REDACTED))
            else:
                spans.append((m.start(), m.end(1), m.end(), " " + REDACTED))
    return spans


def _merge(spans: list[tuple[int, int, int, str]]) -> list[tuple[int, int, int, str]]:
    """Sorted spans with overlaps merged; a span starting inside another's kept part cuts the
    kept part short (the secret wins over the key name)."""
    merged: list[tuple[int, int, int, str]] = []
    for start, keep_end, end, repl in sorted(spans):
        if merged and start < merged[-1][2]:
            s0, k0, e0, r0 = merged[-1]
            if start < k0:
                k0, r0 = start, REDACTED
            merged[-1] = (s0, k0, max(e0, end), r0)
        else:
            merged.append((start, keep_end, end, repl))
    return merged


def _rebuild(text: str, spans: list[tuple[int, int, int, str]]) -> str:
    out: list[str] = []
    last = 0
    for _start, keep_end, end, repl in spans:
        out.append(text[last:keep_end])
        out.append(repl)
        last = end
    out.append(text[last:])
    return "".join(out)


def redact(text: str) -> str:
    """Replace credentials in `text` with `[REDACTED]`. Must not raise; idempotent (a second
    pass runs only when a replacement borders characters a rule could still take)."""
    for _ in range(_MAX_PASSES):
        if not text:
            return text
        spans = _collect(text)
        if not spans:
            return text
        merged = _merge(spans)
        n = len(text)
        again = len(merged) != len(spans) or any(
            end < n and text[end] not in _STOP for _s, _k, end, _r in merged
        )
        text = _rebuild(text, merged)
        if not again:
            return text
        # a replacement borders characters a rule may take on a second look (a value going
        # on after its quoted part, merged overlaps): repeat so redact(redact(x)) == redact(x)
    return text
