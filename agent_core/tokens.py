"""Offline token estimation (no tokenizer data, no network).

`ESTIMATOR` names the active method; it is part of every cache entry, so changing the method
invalidates cached counts automatically.

heuristic-v1 works on character classes, in O(1) per string beyond a 2 KiB sample (first and last KiB):

* ASCII text: characters per token interpolate between 3.0 (dense text with few spaces: JSON,
  minified code, base64, logs) and 4.2 (prose at ~17 % spaces). These are the ratios the
  cl100k/o200k tokenizers are commonly measured at for those kinds of text; the estimate is
  slightly high for prose, which is the safe side for budgeting.
* Non-ASCII text: the UTF-8 byte surplus tells how many multi-byte characters there are
  (CJK = 3 bytes). CJK counts one token per character, two-byte scripts (Cyrillic, Greek,
  accented Latin) about half a token per character.
* Each message adds 4 tokens of envelope, each tool call 8 plus its name and arguments, each
  image part 1,600.

Per-message counts are cached on the message dict under `_tok` (an underscore key, so it never
reaches the wire) together with a cheap shape signature (lengths, not contents): estimating a
history again costs only the messages that are new or whose size changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from functools import lru_cache
from typing import Any, TypeGuard

__all__ = [
    "ESTIMATOR",
    "IMAGE_TOKENS",
    "TOKEN_CACHE_KEY",
    "TokenTally",
    "estimate_message",
    "estimate_messages",
    "estimate_text",
]

ESTIMATOR = "heuristic-v1"
TOKEN_CACHE_KEY = "_tok"
IMAGE_TOKENS = 1600
MESSAGE_OVERHEAD = 4
TOOL_CALL_OVERHEAD = 8

_SAMPLE = 2048
_SHORT = 64
_HALF = _SAMPLE // 2
_DENSE_CPT = 3.0
_PROSE_CPT = 4.2
_PROSE_SPACE_RATIO = 0.17
_PUNCT = b"\"'{}[](),:;=<>/\\|"
_PUNCT_TOKENS = 0.6
_REPLAY_KEYS = ("reasoning", "reasoning_content")
_IMAGE_KINDS = frozenset({"image_url", "image", "input_image"})


def _ascii_tokens(sample: str, scale: float) -> float:
    n = len(sample)
    if n == 0:
        return 0.0
    raw = sample.encode("ascii")
    spaces = n - len(raw.translate(None, b" \n"))
    punct = n - len(raw.translate(None, _PUNCT))
    ratio = min(spaces / n, _PROSE_SPACE_RATIO) / _PROSE_SPACE_RATIO
    cpt = _DENSE_CPT + (_PROSE_CPT - _DENSE_CPT) * ratio
    rest = max(0, n - punct)
    return (rest / cpt + punct * _PUNCT_TOKENS) * scale


def estimate_text(text: str) -> int:
    """Estimated tokens of `text`. Never raises for a str; cost is bounded per call."""
    n = len(text)
    if n == 0:
        return 0
    if n <= _SHORT:
        return _estimate_short(text)
    return _estimate(text, n)


@lru_cache(maxsize=4096)
def _estimate_short(text: str) -> int:
    """Short strings repeat (tool names, arguments, acknowledgements): memoized."""
    return _estimate(text, len(text))


def _estimate(text: str, n: int) -> int:
    if n > _SAMPLE:
        sample = text[:_HALF] + text[-_HALF:]
        scale = n / _SAMPLE
    else:
        sample = text
        scale = 1.0
    if sample.isascii():
        return max(1, round(_ascii_tokens(sample, scale)))
    narrow = sample.encode("ascii", "ignore").decode("ascii")
    surplus = len(sample.encode("utf-8", "surrogatepass")) - len(sample)
    tokens = _ascii_tokens(narrow, scale) + surplus / 2.0 * scale
    return max(1, round(tokens))


def _content_tokens(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return estimate_text(content)
    if isinstance(content, list):
        tokens = 0
        for part in content:
            if _is_mapping(part):
                kind = part.get("type")
                if kind == "text":
                    tokens += estimate_text(str(part.get("text") or ""))
                elif kind in _IMAGE_KINDS:
                    tokens += IMAGE_TOKENS
                else:
                    tokens += estimate_text(str(part))
            else:
                tokens += estimate_text(str(part))
        return tokens
    return estimate_text(str(content))


def _content_signature(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        sig = 0
        for part in content:
            if isinstance(part, Mapping):
                kind = part.get("type")
                if kind == "text":
                    sig += len(str(part.get("text") or "")) + 1
                elif kind in _IMAGE_KINDS:
                    sig += 7919
                else:
                    sig += len(str(part)) + 3
            else:
                sig += len(str(part)) + 5
        return sig * 31 + len(content)
    return len(str(content))


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return type(value) is dict or isinstance(value, Mapping)


def _call_parts(call: Any) -> tuple[str, str]:
    fn = call.get("function") if _is_mapping(call) else None
    if _is_mapping(fn):
        args = fn.get("arguments")
        return str(fn.get("name") or ""), args if isinstance(args, str) else str(args or "")
    return "", str(call)


def _signature(msg: Mapping[str, Any]) -> Any:
    content = msg.get("content")
    calls = msg.get("tool_calls")
    if (
        isinstance(content, str)
        and not calls
        and msg.get("reasoning") is None
        and msg.get("reasoning_content") is None
    ):
        return len(content)
    tsig = 0
    if isinstance(calls, list):
        for call in calls:
            name, args = _call_parts(call)
            tsig = tsig * 31 + len(args) + len(name)
    rsig = 0
    for key in _REPLAY_KEYS:
        value = msg.get(key)
        if isinstance(value, str):
            rsig = rsig * 31 + len(value)
    return (_content_signature(content), tsig, rsig)


def _tokens(msg: Mapping[str, Any]) -> int:
    tokens = MESSAGE_OVERHEAD + _content_tokens(msg.get("content"))
    calls = msg.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            name, args = _call_parts(call)
            tokens += TOOL_CALL_OVERHEAD + estimate_text(name) + estimate_text(args)
    for key in _REPLAY_KEYS:
        value = msg.get(key)
        if isinstance(value, str):
            tokens += estimate_text(value)
    return tokens


def estimate_message(msg: Mapping[str, Any], *, cache: bool = True) -> int:
    """Estimated prompt tokens of one chat message.

    With `cache` and a mutable dict, the count is stored under `_tok` and reused while the
    message's shape signature (content/argument lengths and the estimator name) is unchanged.
    Must not raise for any dict-shaped message.
    """
    if not cache:
        return _tokens(msg)
    get = msg.get
    content = get("content")
    if (
        type(content) is str
        and not get("tool_calls")
        and get("reasoning") is None
        and get("reasoning_content") is None
    ):  # the common case, inlined: same signature and count as the general path
        cached = get(TOKEN_CACHE_KEY)
        n = len(content)
        if type(cached) is tuple and len(cached) == 3 and cached[0] == n and cached[2] == ESTIMATOR:
            hit: int = cached[1]
            return hit
        tokens = MESSAGE_OVERHEAD + estimate_text(content)
        if type(msg) is dict or isinstance(msg, MutableMapping):
            msg[TOKEN_CACHE_KEY] = (n, tokens, ESTIMATOR)
        return tokens
    sig = _signature(msg)
    cached = msg.get(TOKEN_CACHE_KEY)
    if type(cached) is tuple and len(cached) == 3 and cached[0] == sig and cached[2] == ESTIMATOR:
        known: int = cached[1]
        return known
    tokens = _tokens(msg)
    if type(msg) is dict or isinstance(msg, MutableMapping):
        msg[TOKEN_CACHE_KEY] = (sig, tokens, ESTIMATOR)
    return tokens


def estimate_messages(msgs: Iterable[Mapping[str, Any]], *, cache: bool = True) -> int:
    """Sum of `estimate_message` over `msgs` (cached per message, see module docstring)."""
    return sum(estimate_message(m, cache=cache) for m in msgs)


class TokenTally:
    """Running estimate for an append-only history: `estimate(msgs)` costs only the messages
    appended since the previous call, as long as the first and the last previously seen
    message are still the same objects at the same positions; otherwise it re-sums (still
    using the per-message cache). Call `reset()` after editing messages in place.
    """

    __slots__ = ("_count", "_first", "_last", "_total")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._count = 0
        self._total = 0
        self._first: object = None
        self._last: object = None

    def estimate(self, msgs: Sequence[Mapping[str, Any]]) -> int:
        n = len(msgs)
        k = self._count
        if k and n >= k and msgs[0] is self._first and msgs[k - 1] is self._last:
            self._total += estimate_messages(msgs[k:])
        else:
            self._total = estimate_messages(msgs)
        self._count = n
        self._first = msgs[0] if n else None
        self._last = msgs[n - 1] if n else None
        return self._total
