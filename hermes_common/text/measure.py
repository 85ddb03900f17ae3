"""Text length as each platform counts it, and input clean-up shared by the splitter.

Telegram limits are in UTF-16 code units (a character outside the BMP, such as most emoji,
counts 2); Slack and Discord count code points. All functions here are pure and must not raise
on any `str`, including strings holding lone surrogates.
"""

from __future__ import annotations

import unicodedata
from typing import Literal

__all__ = ["Measure", "text_length", "utf16_length", "fit_prefix", "sanitize", "safe_cut"]

Measure = Literal["utf16", "chars"]

_JOINERS = frozenset("\u200d\ufe0e\ufe0f")


def utf16_length(text: str) -> int:
    """Number of UTF-16 code units of `text` (a lone surrogate counts 1)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def text_length(text: str, measure: Measure = "utf16") -> int:
    """Length of `text` in the unit `measure` names ("utf16" or "chars")."""
    if measure == "chars" or text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def fit_prefix(text: str, start: int, budget: int, measure: Measure = "utf16") -> int:
    """Largest `end` such that `text[start:end]` measures at most `budget` (>= start)."""
    end = min(len(text), start + max(0, budget))
    if measure == "chars" or end <= start:
        return end
    width = utf16_length(text[start:end])
    while width > budget:
        drop = max(1, (width - budget) // 2)
        width -= utf16_length(text[end - drop : end])
        end -= drop
    return end


def safe_cut(text: str, cut: int, floor: int) -> int:
    """Move a hard cut left off combining marks / joiners so a grapheme stays whole.

    Never moves below `floor + 1`, so the caller always makes progress.
    """
    probe = cut
    for _ in range(8):
        if probe <= floor + 1 or probe >= len(text):
            break
        ch = text[probe]
        prev = text[probe - 1]
        if unicodedata.combining(ch) or ch in _JOINERS or prev == "\u200d":
            probe -= 1
            continue
        return probe
    return cut if probe <= floor + 1 else probe


def sanitize(text: str) -> str:
    """Normalise line ends to "\\n" and make the string valid Unicode.

    A surrogate pair stored as two code points is merged; a lone surrogate becomes U+FFFD.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.isascii():
        return text
    try:
        text.encode("utf-8")  # strict UTF-8 refuses exactly the surrogate code points
    except UnicodeEncodeError:
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text
