"""Credential redaction for text sent to, and received from, the summarizer.

Covered: provider API keys (`sk-…`, `sk_live_…`, Google `AIza…`, AWS `AKIA…`, GitHub `ghp_…`
and `github_pat_…`, Slack `xox?-…`, Telegram bot tokens), JWTs, PEM private keys (whole blocks
and bare 64-column base64 body lines), credentials in URLs (`scheme://user:secret@host`),
`Bearer …` / `token …` / `Basic …` values, and `key=value` / `"key": "value"` pairs whose key
names a secret (password, token, api_key, secret, credentials, …). Each match becomes
`[REDACTED]`; key names and URL users stay so a summary can say a credential was present.

Speed: every rule is gated by plain substring tests (C speed), and the case-insensitive rules
are matched only at the positions where a keyword occurs in a lower-cased copy, so the cost is
about one pass over the text plus a little work per keyword occurrence.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "redact"]

REDACTED = "[REDACTED]"

_CASED: tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...] = (
    (
        ("PRIVATE KEY",),
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.S,
        ),
        REDACTED,
    ),
    (("\n",), re.compile(r"(?m)^[A-Za-z0-9+/]{64}$"), REDACTED),
    (("sk-", "pk-", "rk-"), re.compile(r"(?<![A-Za-z0-9_])[spr]k-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{16,}"), REDACTED),
    (("_live_", "_test_"), re.compile(r"(?<![A-Za-z0-9_])[spr]k_(?:live|test)_[A-Za-z0-9]{10,}"), REDACTED),
    (("AIza",), re.compile(r"(?<![A-Za-z0-9_])AIza[0-9A-Za-z_\-]{30,}"), REDACTED),
    (("AKIA", "ASIA"), re.compile(r"(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), re.compile(r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{20,}"), REDACTED),
    (("github_pat_",), re.compile(r"github_pat_[A-Za-z0-9_]{20,}"), REDACTED),
    (("xox",), re.compile(r"(?<![A-Za-z0-9_])xox[abposr]-[A-Za-z0-9\-]{10,}"), REDACTED),
    ((":AA",), re.compile(r"\b\d{8,10}:AA[A-Za-z0-9_\-]{30,}"), REDACTED),
    (("eyJ",), re.compile(r"(?<![A-Za-z0-9_])eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), REDACTED),
    (("://",), re.compile(r"(://[^\s:/@]+):[^\s@/]+@"), r"\1:" + REDACTED + "@"),
)

_VALUE = r"(?:\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"',;}{)]{4,})"
# (keyword, anchored pattern on lower-cased text, joiner): group 1 is kept, the rest of the
# match is replaced by joiner + [REDACTED].
_KEYWORD_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
    [
        (kw, re.compile(r"(?<![a-z0-9_])(" + kw + r")\s+[a-z0-9._~+/\-]{16,}=*"), " ")
        for kw in ("bearer", "token", "basic")
    ]
    + [
        (kw, re.compile(r"(" + frag + r"[\"']?\s*[:=]\s*)" + _VALUE), "")
        for kw, frag in (
            ("key", "key"),
            ("secret", "secret"),
            ("token", "token"),
            ("passw", "passw(?:or)?d"),
            ("pwd", "pwd"),
            ("credential", "credentials?"),
        )
    ]
)


def _keyword_pass(text: str, lowered: str) -> str:
    spans: list[tuple[int, int, int, str]] = []
    for kw, pattern, joiner in _KEYWORD_RULES:
        pos = lowered.find(kw)
        while pos >= 0:
            match = pattern.match(lowered, pos)
            if match is not None:
                spans.append((match.start(), match.end(1), match.end(), joiner))
                pos = lowered.find(kw, match.end())
            else:
                pos = lowered.find(kw, pos + 1)
    if not spans:
        return text
    spans.sort()
    out: list[str] = []
    last = 0
    for start, keep_end, end, joiner in spans:
        if start < last:
            continue
        out.append(text[last:keep_end])
        out.append(joiner + REDACTED)
        last = end
    out.append(text[last:])
    return "".join(out)


def redact(text: str) -> str:
    """Replace credentials in `text` with `[REDACTED]`. Must not raise; idempotent."""
    if not text:
        return text
    for needles, pattern, repl in _CASED:
        for needle in needles:
            if needle in text:
                text = pattern.sub(repl, text)
                break
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)
    return _keyword_pass(text, lowered)
