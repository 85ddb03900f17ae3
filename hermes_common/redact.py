"""The one secret redaction of the project: log lines, `hermes config show`, error texts sent
to chats, the summarizer's input and output, and the adapters' error strings all go through
`redact()`.

What is replaced by `[REDACTED]`:

* every value registered at run time (`register_secrets`: the config loader registers each
  configured secret; `register_environment`: the values of secret-named environment
  variables such as `OPENAI_API_KEY` or `TELEGRAM_BOT_TOKEN`), whatever its shape, and the
  values passed in `secrets=` by callers that know their own keys;
* well-known shapes: OpenAI-style `sk-…` (and `pk-`/`rk-`, `sk_live_…`/`pk_test_…`) keys,
  Google `AIza…`, AWS `AKIA…`/`ASIA…`, GitHub `ghp_…`/`gho_…`/`github_pat_…`, Slack
  `xox?-…` and `xapp-…`, Telegram bot tokens (the public bot id before the colon stays),
  JWTs, PEM private keys (whole blocks and bare 64-column base64 body lines, also inside a
  repr or JSON string where the newline is escaped), credentials in
  URLs (`scheme://user:secret@host`, the user stays), `Bearer …`/`Basic …`/`token …` values,
  `key=value`/`"key": "value"` pairs whose key names a secret (password, token, api_key,
  secret, credentials, …) and such query parameters (`?api_key=…`, `&sig=…`).

Speed (the log pipeline redacts every field, the summarizer every prompt chunk): each pattern
is compiled once and starts with a literal (boundary look-behinds sit after it), so the regex
engine jumps between occurrences of that literal at the speed of a substring search and Python
code runs only for real matches; key names are matched on one lower-cased copy; the matches of
all rules become spans, merged where they overlap, and the text is rebuilt once.

Imports only the standard library (the CLI and the logging pipeline load it at start-up).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "clear_registered_secrets",
    "is_secret_name",
    "redact",
    "redact_value",
    "register_environment",
    "register_secret",
    "register_secrets",
    "secret_env_values",
]

REDACTED = "[REDACTED]"
#: Registered and passed-in values shorter than this are ignored (too likely in prose).
MIN_SECRET_LENGTH = 6

# A span is (start, keep_end, end, replacement): text[start:keep_end] stays and
# text[keep_end:end] is replaced by `replacement`.
_Span = tuple[int, int, int, str]
_ToSpan = Callable[[str, re.Match[str]], _Span | None]


def _whole(_text: str, m: re.Match[str]) -> _Span:
    return (m.start(), m.start(), m.end(), REDACTED)


def _line(_text: str, m: re.Match[str]) -> _Span:
    return (m.start(), m.start() + 1, m.end(), REDACTED)  # keeps the leading newline


def _escaped_line(_text: str, m: re.Match[str]) -> _Span:
    return (m.start(), m.start() + 2, m.end(), REDACTED)  # keeps the `\\n` escape


def _prefixed(_text: str, m: re.Match[str]) -> _Span:
    return (m.start() - 1, m.start() - 1, m.end(), REDACTED)  # `k-…`, `k_live_…` after s/p/r


def _key(text: str, m: re.Match[str]) -> _Span | None:
    """`sk-` keys from 6 characters on, `pk-`/`rk-` ones from 16."""
    if text[m.start() - 1] != "s" and len(m.group()) - 2 < 16:
        return None
    return _prefixed(text, m)


def _unglued(text: str, m: re.Match[str]) -> _Span | None:
    """The whole match, unless a word character comes right before it."""
    start = m.start()
    if start and (text[start - 1].isalnum() or text[start - 1] == "_"):
        return None
    return _whole(text, m)


def _url(_text: str, m: re.Match[str]) -> _Span:
    return (m.start(), m.end(1), m.end(), ":" + REDACTED + "@")


def _telegram(text: str, m: re.Match[str]) -> _Span:
    """`:secret` after a bot id of 6 or more digits (look-behind checked): the id stays."""
    start = m.start()
    while start > 0 and text[start - 1].isdecimal():
        start -= 1
    return (start, m.start() + 1, m.end(), REDACTED)


def _bounded(literal: str, rest: str) -> re.Pattern[str]:
    """`literal` not preceded by a word character, then `rest`."""
    return re.compile(f"{re.escape(literal)}(?<![A-Za-z0-9_]{re.escape(literal)}){rest}")


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
    (re.compile(r"\\n[A-Za-z0-9+/]{64}(?=\\n|\n|\Z|[\"'])"), _escaped_line),  # in a repr
    (re.compile(r"k-(?<=[spr]k-)(?<![A-Za-z0-9_][spr]k-)[A-Za-z0-9_\-]{6,}"), _key),
    (re.compile(r"k_(?:live|test)_" + _LIVE), _prefixed),
    (_bounded("AIza", r"[0-9A-Za-z_\-]{30,}"), _whole),
    (re.compile(r"A(?:KIA|SIA)[0-9A-Z]{16}\b"), _whole),
    (_bounded("gh", r"[pousr]_[A-Za-z0-9]{20,}"), _whole),
    (re.compile(r"github_pat_[A-Za-z0-9_]{20,}"), _whole),
    (re.compile(r"x(?:ox[abposre]|app)-[A-Za-z0-9\-]{8,}"), _unglued),
    (re.compile(r":(?<=[0-9]{6}:)[A-Za-z0-9_\-]{30,}"), _telegram),
    (_bounded("eyJ", r"[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), _whole),
    (re.compile(r"(://[^\s:/@]+):[^\s@/]+@"), _url),
)
_FIRST_LINE_B64 = re.compile(r"[A-Za-z0-9+/]{64}(?=\n|\Z)")
_MAX_PASSES = 4
_STOP = frozenset(" \t\r\n\"',;}{)")

_VALUE = r"(?:\\\"[^\"\n]{4,}\\\"|\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"',;]{4,})"
_ASSIGNED = r"((?:\\?[\"'])?\s*[:=]\s*)" + _VALUE  # quotes may be escaped (JSON in JSON)
# Patterns on the lower-cased text. Group 1 is the key name; `keyword value` forms keep it and
# replace the rest by " [REDACTED]", `key: value` forms keep it plus group 2 (the separator) and
# replace the value (inside its quotes, so JSON stays JSON).
_KEYWORD_RULES: tuple[re.Pattern[str], ...] = (
    re.compile(r"(token)(?:(?<![a-z0-9_]token)\s+[a-z0-9._~+/\-]{16,}=*|" + _ASSIGNED + ")"),
    re.compile(f"(secret){_ASSIGNED}"),
    re.compile(f"(passw(?:or)?d){_ASSIGNED}"),
    re.compile(f"(pwd){_ASSIGNED}"),
    re.compile(f"(credentials?){_ASSIGNED}"),
)
# `key: value` only for a bare `key` or one that names a secret (`api_key`, `x-api-key`,
# `private_key`, …): `session_key`, `cache_key` or `sort_key` hold no secret.
_KEY_RULE = re.compile(f"(key){_ASSIGNED}")
_SECRET_KEY_QUALIFIER = re.compile(
    r"(?:api|access|secret|private|signing|auth|client|master|encryption|license|ssh)[_-]?\Z"
)
# `Bearer x`, `Basic x`: the scheme stays. A value of only lower-case letters shorter than 16
# is prose ("basic usage"), not a credential.
_AUTH_SCHEMES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(f"({scheme})(?<![a-z0-9_]{scheme})" + r"(\s+)([a-z0-9._~+/=\-]{6,})")
    for scheme in ("bearer", "basic")
)
_PROSE_WORD = re.compile(r"[A-Za-z][a-z]{5,14}")
_WORD = re.compile(r"[a-z0-9_]")
_QUERY: tuple[re.Pattern[str], ...] = tuple(
    re.compile(re.escape(lead) + r"(?:api[_-]?key|access[_-]?token|token|key|secret|password|sig)=")
    for lead in "?&"
)
_QUERY_VALUE = re.compile(r"[^&\s\"']+")

_SECRET_NAME = re.compile(
    r"(?i)(^|[_-])(token|secret|password|passwd|api_?keys?|apikey|authorization|"
    r"credentials?|private_?key|access_?key|secret_?key|cookie)$"
)

_lock = threading.Lock()
_registered: frozenset[str] = frozenset()
_registered_re: re.Pattern[str] | None = None
# Results for short texts (log fields repeat: event names, ids, platforms). Replaced, never
# cleared in place, whenever the registered values change: a result computed against the old
# values can only land in the old dict.
_MEMO_MAX_LEN = 256
_MEMO_SIZE = 4096
_memo: dict[str, str] = {}


def register_secret(value: str | None) -> None:
    """Redact this exact value from now on (shorter than `MIN_SECRET_LENGTH`: ignored)."""
    if value:
        register_secrets([value])


def register_secrets(values: Iterable[str | None]) -> None:
    """Redact these exact values from now on, process-wide. Thread-safe; must not raise."""
    global _registered, _registered_re, _memo
    new = {v for v in values if v and len(v) >= MIN_SECRET_LENGTH}
    if not new or new <= _registered:
        return
    with _lock:
        _registered = _registered | new
        _registered_re = _alternation(_registered)
        _memo = {}


def secret_env_values(environ: Mapping[str, str]) -> list[str]:
    """The values of the secret-named variables of `environ` (`*_TOKEN`, `*_API_KEY`,
    `*_SECRET`, `*_PASSWORD`, …)."""
    return [v for k, v in environ.items() if v and is_secret_name(k)]


def register_environment(environ: Mapping[str, str]) -> None:
    """Register the value of every secret-named variable of `environ` (e.g. `os.environ`
    after the profile's `.env` was applied). Must not raise."""
    register_secrets(secret_env_values(environ))


def clear_registered_secrets() -> None:
    """Forget every registered value (tests)."""
    global _registered, _registered_re, _memo
    with _lock:
        _registered = frozenset()
        _registered_re = None
        _memo = {}


def is_secret_name(name: object) -> bool:
    """True for key or variable names that hold secrets (`token`, `bot_token`, `api_keys`,
    `password`, `OPENAI_API_KEY`, `AWS_SECRET_ACCESS_KEY`…)."""
    return isinstance(name, str) and _secret_name(name)


@lru_cache(maxsize=1024)
def _secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every registered value, every value of `secrets` (shorter than
    `MIN_SECRET_LENGTH`: ignored) and every known secret shape replaced by `[REDACTED]`.

    Must not raise; idempotent (a second pass runs only when a replacement borders
    characters a rule could still take). Short texts are remembered (until the registered
    values change), so a repeated log field costs a dictionary look-up.
    """
    if secrets or len(text) > _MEMO_MAX_LEN:
        return _redact(text, _extra_re(tuple(sorted(set(secrets)))) if secrets else None)
    memo = _memo
    done = memo.get(text)
    if done is None:
        done = _redact(text, None)
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        memo[text] = done
    return done


def _redact(text: str, extra: re.Pattern[str] | None) -> str:
    for _ in range(_MAX_PASSES):
        if not text:
            return text
        spans = _collect(text, extra)
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
    return text


def redact_value(value: Any, key: object = None, *, secrets: Iterable[str] = ()) -> Any:
    """A redacted copy of `value`: strings under a secret-named key are replaced entirely
    (empty ones stay empty so "unset" stays visible); every other string goes through
    `redact`. Walks dicts, lists and tuples (tuples come back as lists); pydantic secret
    values are replaced. Must not raise."""
    if isinstance(value, str):
        if is_secret_name(key):
            return REDACTED if value else value
        return redact(value, secrets)
    if isinstance(value, Mapping):
        return {k: redact_value(v, k, secrets=secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, key, secrets=secrets) for v in value]
    if hasattr(value, "get_secret_value"):
        return REDACTED if str(value.get_secret_value()) else ""
    return value


# -- engine ---------------------------------------------------------------------------------

def _alternation(values: Iterable[str]) -> re.Pattern[str]:
    ordered = sorted(values, key=len, reverse=True)  # the longest of overlapping values wins
    return re.compile("|".join(re.escape(v) for v in ordered))


@lru_cache(maxsize=64)
def _extra_re(values: tuple[str, ...]) -> re.Pattern[str] | None:
    kept = [v for v in values if len(v) >= MIN_SECRET_LENGTH]
    return _alternation(kept) if kept else None


def _lowered(text: str) -> str:
    """A lower-cased copy with the same length (characters whose lower case is longer stay)."""
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)
    return lowered


def _collect(text: str, extra: re.Pattern[str] | None) -> list[_Span]:
    spans: list[_Span] = []
    for exact in (_registered_re, extra):
        if exact is not None:
            spans.extend((m.start(), m.start(), m.end(), REDACTED) for m in exact.finditer(text))
    for pattern, to_span in _CASED:
        for m in pattern.finditer(text):
            span = to_span(text, m)
            if span is not None:
                spans.append(span)
    if head := _FIRST_LINE_B64.match(text):
        spans.append(_whole(text, head))
    lowered = _lowered(text)
    for pattern in _KEYWORD_RULES:
        spans.extend(_keyword_span(lowered, m) for m in pattern.finditer(lowered))
    for m in _KEY_RULE.finditer(lowered):
        start = m.start()
        if (start == 0 or not _WORD.match(lowered, start - 1)
                or _SECRET_KEY_QUALIFIER.search(lowered, max(0, start - 12), start)):
            spans.append(_keyword_span(lowered, m))
    for pattern in _AUTH_SCHEMES:
        for m in pattern.finditer(lowered):
            if not _PROSE_WORD.fullmatch(text, m.start(3), m.end(3)):
                spans.append((m.start(), m.end(2), m.end(), REDACTED))
    for pattern in _QUERY:
        for m in pattern.finditer(lowered):
            if v := _QUERY_VALUE.match(text, m.end()):
                spans.append((m.start(), m.end(), v.end(), REDACTED))
    return spans


def _keyword_span(lowered: str, m: re.Match[str]) -> _Span:
    if m.lastindex != 2:  # `token abc…`: keep the keyword
        return (m.start(), m.end(1), m.end(), " " + REDACTED)
    keep, end = m.end(2), m.end()
    if lowered.startswith('\\"', keep):  # a quoted value: keep the (escaped) quotes
        keep, end = keep + 2, end - 2
    elif lowered[keep] in "\"'":
        keep, end = keep + 1, end - 1
    return (m.start(), keep, end, REDACTED)


def _merge(spans: list[_Span]) -> list[_Span]:
    """Sorted spans with overlaps merged; a span that replaces part of another's kept part
    cuts the kept part short (the secret wins over the key name)."""
    merged: list[_Span] = []
    for start, keep_end, end, repl in sorted(spans):
        if merged and start < merged[-1][2]:
            s0, k0, e0, r0 = merged[-1]
            if keep_end < k0:
                k0, r0 = max(s0, keep_end), REDACTED
            merged[-1] = (s0, k0, max(e0, end), r0)
        else:
            merged.append((start, keep_end, end, repl))
    return merged


def _rebuild(text: str, spans: list[_Span]) -> str:
    out: list[str] = []
    last = 0
    for _start, keep_end, end, repl in spans:
        out.append(text[last:keep_end])
        out.append(repl)
        last = end
    out.append(text[last:])
    return "".join(out)
