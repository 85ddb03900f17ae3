"""Snippets computed in Python from the hit's text (cheaper than FTS5 `snippet()`, which
re-tokenizes whole documents; tool results are often 20 KB).

Matches are located with `str.find` on the lower-cased text (C speed) and confirmed with a
small anchored regex, so a 20 KB document costs microseconds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from storage.fts_query import Term

__all__ = ["Matcher", "term_patterns", "make_snippet", "WINDOW"]

WINDOW = 160
_MAX_MATCHES = 32
_MAX_PROBES = 2_000
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Matcher:
    """Finds one query term: `literal` (lower-case) locates candidates, `pattern` confirms."""

    literal: str
    pattern: re.Pattern[str]
    word: bool

    def find(self, text: str, low: str) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        pos = low.find(self.literal)
        probes = 0
        while pos != -1 and len(out) < _MAX_MATCHES and probes < _MAX_PROBES:
            probes += 1
            if not self.word or pos == 0 or not _is_word(text[pos - 1]):
                m = self.pattern.match(text, pos)
                if m and m.end() > pos:
                    out.append((pos, m.end()))
                    pos = low.find(self.literal, m.end())
                    continue
            pos = low.find(self.literal, pos + 1)
        return out


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def term_patterns(terms: Sequence[Term], *, substring: bool) -> list[Matcher]:
    """One matcher per term: word-wise for the unicode61 index, plain substrings for the
    trigram index."""
    out = []
    for t in terms:
        if substring:
            out.append(Matcher(t.text.lower(), re.compile(re.escape(t.text), re.I), False))
            continue
        words = _WORD.findall(t.text)
        if not words:
            continue
        body = r"\W+".join(re.escape(w) for w in words)
        tail = r"\w*" if t.prefix else r"(?!\w)"
        out.append(Matcher(words[0].lower(), re.compile(body + tail, re.I), True))
    return out


def make_snippet(
    texts: Sequence[str | None], matchers: Sequence[Matcher], marks: tuple[str, str]
) -> str:
    """A window of about `WINDOW` characters around the densest cluster of matches in the
    first text that matches, with matches wrapped in `marks`. Must not raise."""
    for text in texts:
        if not text:
            continue
        low = text.lower()
        if len(low) != len(text):  # rare case-mapping that changes length: use regex only
            low = text
        found: list[tuple[int, int, int]] = []
        for k, matcher in enumerate(matchers):
            found.extend((s, e, k) for s, e in matcher.find(text, low))
        if not found:
            continue
        found.sort()
        return _render(text, found, found[_densest(found)][0], marks)
    first = next((t for t in texts if t), "")
    return _flat(first[:WINDOW]) + ("…" if len(first) > WINDOW else "")


def _densest(found: list[tuple[int, int, int]]) -> int:
    """Index of the match starting the window with the most distinct terms (two pointers)."""
    counts: dict[int, int] = {}
    best, best_score, j = 0, -1, 0
    for i, (start, _, _) in enumerate(found):
        while j < len(found) and found[j][0] < start + WINDOW:
            counts[found[j][2]] = counts.get(found[j][2], 0) + 1
            j += 1
        if len(counts) > best_score:
            best, best_score = i, len(counts)
        k = found[i][2]
        counts[k] -= 1
        if not counts[k]:
            del counts[k]
    return best


def _render(
    text: str, found: list[tuple[int, int, int]], anchor: int, marks: tuple[str, str]
) -> str:
    lo = max(0, anchor - WINDOW // 4)
    space = text.rfind(" ", 0, lo) if lo else -1
    if lo and space != -1 and lo - space < 20:
        lo = space + 1
    hi = min(len(text), lo + WINDOW)
    out, pos = [], lo
    for start, end, _ in found:
        if start < pos or end > hi:
            continue
        out.append(text[pos:start])
        out.append(marks[0] + text[start:end] + marks[1])
        pos = end
    out.append(text[pos:hi])
    return ("…" if lo else "") + _flat("".join(out)) + ("…" if hi < len(text) else "")


def _flat(text: str) -> str:
    return " ".join(text.split())
