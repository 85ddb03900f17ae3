"""Split a long Markdown reply into parts that each fit a platform limit.

Cuts prefer, in order: a paragraph break, a line break, a space (never inside an inline code
span), and only then a hard cut (a single word longer than the limit). A fenced code block cut
in two is closed at the end of the part and reopened with its language in the next, so every
part parses on its own. Parts are numbered "(i/n)" when there are several; the number counts
toward the limit.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import NamedTuple

from hermes_common.text.measure import Measure, fit_prefix, safe_cut, sanitize, text_length

__all__ = ["split_message", "split_chunks", "code_fence_ranges", "truncate_preview", "part_marker", "MIN_LIMIT"]

MIN_LIMIT = 16

_FENCE_OPEN = re.compile(r"(?P<prefix>(?:[ \t]*>)*[ \t]*)(?P<markup>`{3,}|~{3,})(?P<info>.*)")
_BACKTICKS = re.compile(r"`+")
_NON_SPACE = re.compile(r"\S")  # re's \s is exactly str.isspace


class _Fence(NamedTuple):
    open_start: int
    body_start: int
    body_end: int
    close_end: int
    prefix: str
    markup: str
    info: str

    def header(self) -> str:
        return f"{self.prefix}{self.markup}{self.info}\n"

    def footer(self) -> str:
        return f"\n{self.prefix}{self.markup}"


def _is_close(line: str, prefix: str, markup: str) -> bool:
    rest = line[len(prefix) :] if line.startswith(prefix) else line
    rest = rest.strip(" \t")
    return len(rest) >= len(markup) and rest == markup[0] * len(rest)


def _fence_candidates(text: str) -> list[tuple[str, int, int]]:
    """(line, start, end) of each line holding ``` or ~~~, in order: only such a line can
    open or close a fence, and substring search finds them much faster than a line loop."""
    starts: set[int] = set()
    for marker in ("```", "~~~"):
        i = text.find(marker)
        while i >= 0:
            starts.add(text.rfind("\n", 0, i) + 1)
            nl = text.find("\n", i)
            if nl < 0:
                break
            i = text.find(marker, nl)
    out = []
    for start in sorted(starts):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        out.append((text[start:end], start, end))
    return out


def _scan_fences(text: str, limit: int, measure: Measure) -> list[_Fence]:
    """The fenced code blocks of `text` whose header and footer fit a quarter of `limit`
    (an over-long info string is cut to its first word first)."""
    quarter = limit // 4
    fences: list[_Fence] = []
    open_at: tuple[int, int, str, str, str] | None = None
    for line, pos, end in _fence_candidates(text):
        if open_at is None:
            m = _FENCE_OPEN.fullmatch(line)
            if m is not None:
                prefix, markup, info = m.groups()
                if markup[0] != "`" or "`" not in info:
                    open_at = (pos, end + 1, prefix, markup, info.strip())
        elif _is_close(line, open_at[2], open_at[3]):
            start, body_start, prefix, markup, info = open_at
            _keep(fences, _Fence(start, body_start, pos, end, prefix, markup, info), quarter,
                  measure)
            open_at = None
    if open_at is not None:
        start, body_start, prefix, markup, info = open_at
        n = len(text)
        _keep(fences, _Fence(start, min(body_start, n), n + 1, n, prefix, markup, info),
              quarter, measure)
    return fences


def _keep(fences: list[_Fence], f: _Fence, quarter: int, measure: Measure) -> None:
    if text_length(f.header(), measure) > quarter:
        words = f.info.split()
        f = f._replace(info=words[0][:20] if words else "")
        if text_length(f.header(), measure) > quarter:
            return
    fences.append(f)  # the footer is the header without its info: it fits too


class _Doc:
    """One sanitized text with its fences indexed for position lookups."""

    def __init__(self, text: str, limit: int, measure: Measure) -> None:
        self.text = text
        self.fences = _scan_fences(text, limit, measure)
        self._starts = [f.body_start for f in self.fences]
        self._opens = [f.open_start for f in self.fences]
        # A footer is "\n" + prefix + markup, all ASCII: its width is its length in any measure.
        self.max_footer = max((len(f.prefix) + len(f.markup) + 1 for f in self.fences), default=0)

    def fence_in_body(self, pos: int) -> _Fence | None:
        """The fence whose body holds position `pos` (body_start <= pos < body_end)."""
        i = bisect_right(self._starts, pos) - 1
        if i >= 0 and pos < self.fences[i].body_end:
            return self.fences[i]
        return None

    def open_fence_at(self, cut: int) -> _Fence | None:
        """The fence left open by a part ending at `cut` (opened before it, not yet closed)."""
        i = bisect_right(self._opens, cut - 1) - 1
        if i >= 0 and cut < self.fences[i].body_end:
            return self.fences[i]
        return None

    def bad_cut(self, s: int, cut: int) -> bool:
        """True when cutting at `cut` would split an opening fence line or leave it empty."""
        f = self.open_fence_at(cut)
        if f is None:
            return False
        return cut < f.body_start or (f.open_start >= s
                                      and not _has_text(self.text, f.body_start, cut))

    def code_spans(self, a: int, b: int) -> list[tuple[int, int]]:
        """Inline code spans (CommonMark backtick rule) overlapping text[a:b], outside fences."""
        text = self.text
        runs = [
            (m.start(), m.end() - m.start())
            for m in _BACKTICKS.finditer(text, a, b)
            if self.fence_in_body(m.start()) is None
            and not (m.start() > 0 and text[m.start() - 1] == "\\")
        ]
        spans: list[tuple[int, int]] = []
        i = 0
        while i < len(runs):
            start, width = runs[i]
            para_end = text.find("\n\n", start, b)
            para_end = b if para_end < 0 else para_end
            for j in range(i + 1, len(runs)):
                if runs[j][0] > para_end:
                    break
                if runs[j][1] == width:
                    spans.append((start, runs[j][0] + width))
                    i = j
                    break
            i += 1
        return spans


def _has_text(text: str, a: int, b: int) -> bool:
    """True when text[a:b] holds a non-whitespace character (as `str.strip` sees it)."""
    return _NON_SPACE.search(text, a, b) is not None


def _inside(spans: list[tuple[int, int]], pos: int) -> bool:
    return any(a < pos < b for a, b in spans)


def _pick_cut(doc: _Doc, s: int, e: int) -> tuple[int, int]:
    """Choose where the part text[s:?] ends; returns (cut, next_start)."""
    text = doc.text
    spans: list[tuple[int, int]] | None = None

    def span_list() -> list[tuple[int, int]]:
        nonlocal spans
        if spans is None:
            spans = doc.code_spans(s, e)
        return spans

    for lo in (s + (e - s) // 2, s + 1):
        idx = text.rfind("\n\n", s, e)
        while idx >= lo:
            if (doc.fence_in_body(idx) is None and _has_text(text, s, idx)
                    and not doc.bad_cut(s, idx)):
                return idx, idx + 2
            idx = text.rfind("\n\n", s, idx)
        idx = text.rfind("\n", s, e)
        while idx >= lo:
            if (_has_text(text, s, idx) and not doc.bad_cut(s, idx)
                    and not _inside(span_list(), idx)):
                return idx, idx + 1
            idx = text.rfind("\n", s, idx)
        idx = text.rfind(" ", s, e)
        while idx >= lo:
            if (doc.fence_in_body(idx) is None and _has_text(text, s, idx)
                    and not doc.bad_cut(s, idx) and not _inside(span_list(), idx)):
                return idx, idx + 1
            idx = text.rfind(" ", s, idx)
    cut = safe_cut(text, e, s)
    return cut, cut


def split_chunks(text: str, *, limit: int, measure: Measure = "utf16") -> list[str]:
    """Split `text` into parts of at most `limit` units, fences balanced, no numbering.

    The text is sanitized first (CRLF, lone surrogates). Blank text gives []. A text that fits
    comes back as one part, unchanged apart from sanitizing.

    Raises:
        ValueError: if `limit` is below `MIN_LIMIT`.
    """
    if limit < MIN_LIMIT:
        raise ValueError(f"limit must be at least {MIN_LIMIT}, got {limit}")
    text = sanitize(text)
    if not text or text.isspace():
        return []
    if text_length(text, measure) <= limit:
        return [text]
    doc = _Doc(text, limit, measure)
    n = len(text)
    parts: list[str] = []
    s = 0
    while s < n:
        fence = doc.fence_in_body(s)
        if fence is None:
            while s < n and text[s] in " \n":
                s += 1
            if s >= n:
                break
        header = fence.header() if fence else ""
        avail = limit - text_length(header, measure) - doc.max_footer
        e = fit_prefix(text, s, avail, measure)
        if e >= n:
            cut, nxt = n, n
        else:
            cut, nxt = _pick_cut(doc, s, max(e, s + 1))
        closing = doc.open_fence_at(cut)
        if closing is not None:
            body = text[s:cut].rstrip("\n")
            footer = closing.footer()
            if nxt >= closing.body_end:
                nxt = closing.close_end + 1
        else:
            body = text[s:cut].rstrip()
            footer = ""
        if (body and not body.isspace()) or footer:
            parts.append(f"{header}{body}{footer}")
        s = max(nxt, s + 1)
    return parts


def code_fence_ranges(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each fenced code block in `text`, fence lines included."""
    return [(f.open_start, f.close_end) for f in _scan_fences(text, 1 << 30, "chars")]


def part_marker(index: int, total: int) -> str:
    """The numbering text of part `index` (1-based) of `total`, e.g. "(1/3)"."""
    return f"({index}/{total})"


def split_message(
    text: str, *, limit: int, measure: Measure = "utf16", number_parts: bool = True
) -> list[str]:
    """Split a Markdown reply into parts that each measure at most `limit`.

    When there are several parts and `number_parts` is true, each ends with a line "(i/n)";
    the marker is counted within the limit (and left out when the limit is too small to hold
    it beside `MIN_LIMIT` units of text). Must not raise for any text when
    `limit >= MIN_LIMIT`.

    Raises:
        ValueError: if `limit` is below `MIN_LIMIT`.
    """
    parts = split_chunks(text, limit=limit, measure=measure)
    if len(parts) <= 1 or not number_parts:
        return parts
    total_guess = len(parts)
    while True:
        reserve = len("\n" + part_marker(total_guess, total_guess))
        if limit - reserve < MIN_LIMIT:
            return parts
        parts = split_chunks(text, limit=limit - reserve, measure=measure)
        if len(str(len(parts))) <= len(str(total_guess)):
            break
        total_guess = len(parts)
    total = len(parts)
    return [f"{p}\n{part_marker(i, total)}" for i, p in enumerate(parts, 1)]


def truncate_preview(
    text: str, limit: int, measure: Measure = "utf16", *, ellipsis: str = " …"
) -> str:
    """Shorten an over-long streaming preview to fit `limit`, keeping its beginning.

    Cuts at a word boundary when one is near, closes a code fence left open, and ends with
    `ellipsis`. A text that fits is returned sanitized but otherwise unchanged. Must not raise.
    """
    text = sanitize(text)
    if text_length(text, measure) <= limit:
        return text
    parts = split_chunks(text, limit=max(MIN_LIMIT, limit - text_length(ellipsis, measure)),
                         measure=measure)
    head = parts[0] if parts else ""
    result = head + ellipsis
    if text_length(result, measure) > limit:
        result = head[: fit_prefix(head, 0, limit - len(ellipsis), measure)] + ellipsis
    return result
