"""Text preparation for the threat scan: hidden characters, the matching form, encoded blobs.

Three jobs, each linear in the text:

- `hidden_character`: the first character that renders as nothing (or reverses text) and has
  no business in prose: zero-width spaces, word joiners, bidi overrides, Unicode tags outside
  flag emoji, Hangul fillers, invisible operators, runs of variation selectors.
- `visible`: NFKC with every default-ignorable code point removed (variation selectors,
  zero-width characters, fillers, tags, bidi marks, soft hyphens ...). Case is kept, so encoded
  blobs can still be decoded from it.
- `fold`: the form patterns are matched against: NFKD, case-folded, combining marks dropped,
  every non-ASCII character replaced by its Unicode TR39 confusable prototype (Cyrillic `і` →
  `i`, Greek `ο` → `o`, Persian `ی` → Arabic `ى`), then NFC. ASCII is only lower-cased: it is
  the alphabet the patterns are written in. The same function folds the literal parts of the
  patterns, so a pattern written in Russian or Arabic matches text folded the same way.
- `encoded_blobs`: base64 (standard or URL-safe, also wrapped over lines) and hex (plain,
  `\\xNN`, `%NN`, or byte pairs separated by spaces or colons) long enough to hide a sentence,
  decoded; only results that are UTF-8 text come back.

The confusables table (`agent_core.confusables`) is built once, on first use, or read from
the profile's cache.
"""

from __future__ import annotations

import binascii
import re
import unicodedata
from collections.abc import Iterator

from agent_core.confusables import table

__all__ = ["MIN_BLOB_BYTES", "encoded_blobs", "fold", "hidden_character", "visible"]

#: Encoded text shorter than this (decoded bytes) is not decoded: too short for an instruction.
MIN_BLOB_BYTES = 24

# Default_Ignorable_Code_Point (DerivedCoreProperties.txt), plus the interlinear annotation
# controls: removed before matching.
_IGNORABLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_IGNORABLE_RE = re.compile(f"[{_IGNORABLE}]+")
# Hidden characters that are flagged on their own: nothing legitimate puts them in prose.
# (Bidi embeddings and isolates, marks and byte-order marks are only removed: translations
# into right-to-left languages use them legitimately.)
_SUSPICIOUS_RE = re.compile(
    "[\u115f\u1160\u180e\u200b\u202d\u202e\u2060-\u2064\u206a-\u206f\u3164\uffa0"
    "\ufff9-\ufffb\U0001d173-\U0001d17a\U000e0000-\U000e00ff\U000e01f0-\U000e0fff]"
    "|(?<=[A-Za-z0-9])[\u200c\u200d]|[\u200c\u200d](?=[A-Za-z0-9])"  # joiners inside Latin words
    "|[\ufe00-\ufe0f\U000e0100-\U000e01ef]{2,}",  # runs of variation selectors carry data
)
_MAYBE_HIDDEN_RE = re.compile(
    f"[{_IGNORABLE}\u180e\ufff9-\ufffb\U000e0100-\U000e01ef]"
)
# Subdivision flags (England, Scotland, Wales) are a black flag followed by tag characters.
_FLAG_TAGS_RE = re.compile("(?<=\U0001f3f4)[\U000e0020-\U000e007e]{1,7}\U000e007f")

_BASE64_RE = re.compile(
    r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{32,}={0,2}(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9+/_-]{16,}={0,2})*"
)
# Plain hex runs are found by _BASE64_RE (hex digits are base64 letters too).
_ESCAPED_HEX_RE = re.compile(r"(?:(?:\\x|%)[0-9A-Fa-f]{2}){24,}")
_SPACED_HEX_RE = re.compile(
    r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}[ :]){23,}[0-9A-Fa-f]{2}(?![0-9A-Fa-f])"
)
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_HEX_JUNK_RE = re.compile(r"\\x|%|[ :]")
_WS_RE = re.compile(r"\s+")
_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def hidden_character(text: str) -> str | None:
    """The first suspicious hidden character in `text`, or None. Must not raise."""
    if text.isascii() or not _MAYBE_HIDDEN_RE.search(text):
        return None
    probe = _FLAG_TAGS_RE.sub("", text) if "\U0001f3f4" in text else text
    found = _SUSPICIOUS_RE.search(probe)
    return found.group()[0] if found else None


def visible(text: str) -> str:
    """`text` in NFKC with default-ignorable characters removed; case is kept."""
    if text.isascii():
        return text
    return _IGNORABLE_RE.sub("", unicodedata.normalize("NFKC", text))


def fold(text: str) -> str:
    """The matching form of `text` (see the module docstring). Idempotent; must not raise."""
    if text.isascii():
        return text.lower()
    text = unicodedata.normalize("NFKD", _IGNORABLE_RE.sub("", text)).casefold()
    text = _NON_ASCII_RE.sub(_translate_run, unicodedata.normalize("NFKD", text))
    return unicodedata.normalize("NFC", text)


_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]+")


def _translate_run(match: re.Match[str]) -> str:
    return match.group().translate(table())


def encoded_blobs(text: str) -> Iterator[tuple[str, str]]:
    """(encoding, decoded text) for each base64 or hex blob in `text` that decodes to UTF-8
    text of at least `MIN_BLOB_BYTES` bytes. Work is linear in `text`; must not raise."""
    hex_runs = [_SPACED_HEX_RE.finditer(text)]
    if "\\x" in text or "%" in text:
        hex_runs.append(_ESCAPED_HEX_RE.finditer(text))
    for runs in hex_runs:
        for match in runs:
            decoded = _text_or_none(_unhex(match.group()))
            if decoded is not None:
                yield "hex", decoded
    for match in _BASE64_RE.finditer(text):
        raw = _WS_RE.sub("", match.group())
        if _HEX_DIGITS.issuperset(raw):
            decoded = _text_or_none(_unhex(raw))
            kind = "hex"
        else:
            decoded, kind = _text_or_none(_unbase64(raw)), "base64"
        if decoded is not None:
            yield kind, decoded


def _unhex(blob: str) -> bytes:
    digits = _HEX_JUNK_RE.sub("", blob)
    try:
        return binascii.unhexlify(digits[: len(digits) // 2 * 2])
    except (binascii.Error, ValueError):
        return b""


def _unbase64(blob: str) -> bytes:
    blob = blob.rstrip("=").replace("-", "+").replace("_", "/")
    blob = blob[: len(blob) - len(blob) % 4] if len(blob) % 4 == 1 else blob
    try:
        return binascii.a2b_base64(blob + "=" * (-len(blob) % 4))
    except (binascii.Error, ValueError):
        return b""


def _text_or_none(data: bytes) -> str | None:
    if len(data) < MIN_BLOB_BYTES:
        return None
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _CONTROL_RE.search(decoded) or not any(c.isalpha() for c in decoded[:64]):
        return None
    return decoded
