"""Format a Markdown reply for one platform dialect and split it into sendable parts.

The Markdown source is split first (fences balanced), then each part is converted on its own,
so every part is independently valid in the dialect. A part that grew past the limit while
being converted (escaping, tags) is split again from its source with a smaller budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType

from hermes_common.text.markdown import (
    escape_markdown_v2,
    to_discord,
    to_plain,
    to_slack_mrkdwn,
    to_telegram_html,
    to_telegram_markdown_v2,
)
from hermes_common.text.measure import Measure, text_length
from hermes_common.text.split import MIN_LIMIT, part_marker, split_chunks, split_message

__all__ = [
    "DIALECT_NAMES",
    "FORMATTERS",
    "MARKDOWN",
    "MIN_RENDER_LIMIT",
    "PLAIN",
    "render_parts",
    "render_preview",
    "render_reply",
]

MIN_RENDER_LIMIT = 256
_MAX_DEPTH = 8

FORMATTERS: Mapping[str, Callable[[str], str]] = MappingProxyType(
    {
        "telegram_html": to_telegram_html,
        "telegram_markdown_v2": to_telegram_markdown_v2,
        "slack_mrkdwn": to_slack_mrkdwn,
        "discord": to_discord,
        "plain": to_plain,
    }
)
MARKDOWN = "markdown"
"""The dialect of platforms that render Markdown themselves: replies are split, not converted."""
PLAIN = "plain"
"""Plain text without markup (also every platform's fallback when formatting is rejected)."""
DIALECT_NAMES: frozenset[str] = frozenset(FORMATTERS) | {MARKDOWN}
"""Every dialect an adapter may declare (`Capabilities.dialect`)."""

_MARKER_ESCAPE: Mapping[str, Callable[[str], str]] = MappingProxyType(
    {"telegram_markdown_v2": escape_markdown_v2}
)


def _fit(md: str, fmt: Callable[[str], str], limit: int, src_limit: int, measure: Measure,
         depth: int) -> list[str]:
    out: list[str] = []
    for src in split_chunks(md, limit=src_limit, measure=measure):
        rendered = fmt(src).strip("\n")
        if not rendered or rendered.isspace():
            continue
        width = text_length(rendered, measure)
        if width <= limit:
            out.append(rendered)
            continue
        src_width = text_length(src, measure)
        smaller = max(MIN_LIMIT, min(src_width - 1, int(src_width * limit / width * 0.9)))
        if depth >= _MAX_DEPTH or src_width <= MIN_LIMIT:
            out.append(rendered)
            continue
        out.extend(_fit(src, fmt, limit, smaller, measure, depth + 1))
    return out


def _source_budget(
    md: str, total: int, fmt: Callable[[str], str], limit: int, measure: Measure
) -> tuple[int, int]:
    """(source budget, expected part count). The budget is chosen so converted parts usually
    fit at once: the growth ratio of a first part (plus a margin) is applied to the whole
    split, saving a second conversion pass. Only a sample from the head of `md` (half a
    part) is split and converted here. `total` is the width of `md`."""
    head = split_chunks(md[: limit + 64], limit=max(MIN_LIMIT, limit // 2), measure=measure)
    if not head:
        return limit, 0
    src_width = text_length(head[0], measure)
    width = text_length(fmt(head[0]).strip("\n"), measure)
    if width <= src_width or src_width <= 0:  # converting does not make it longer
        return limit, math.ceil(total / limit)
    budget = max(MIN_LIMIT, int(limit * src_width / width * 0.95))
    return budget, math.ceil(total / max(1, budget))


def render_parts(
    md: str,
    *,
    dialect: str,
    limit: int,
    measure: Measure = "utf16",
    number_parts: bool = True,
) -> list[str]:
    """Convert Markdown `md` to `dialect` and split it into parts of at most `limit` units.

    `dialect` is a key of `FORMATTERS`. Parts are numbered "(i/n)" (escaped for the dialect)
    when there are several. Blank input gives []. CPU-bound (about 0.1 ms per KB with
    pyromark, 1 ms per KB with the markdown-it-py fallback): call it via `asyncio.to_thread`
    for long replies.

    Raises:
        ValueError: unknown dialect, or `limit` below `MIN_RENDER_LIMIT`.
    """
    fmt = FORMATTERS.get(dialect)
    if fmt is None:
        raise ValueError(f"unknown dialect {dialect!r}; known: {sorted(FORMATTERS)}")
    if limit < MIN_RENDER_LIMIT:
        raise ValueError(f"limit must be at least {MIN_RENDER_LIMIT}, got {limit}")
    if not md or md.isspace():
        return []
    total = text_length(md, measure)
    if total <= 2 * limit:
        whole = fmt(md).strip("\n")
        if not whole or whole.isspace():
            return []
        if text_length(whole, measure) <= limit:
            return [whole]
    escape = _MARKER_ESCAPE.get(dialect, str)

    def reserve(total: int) -> int:
        if not number_parts:
            return 0
        return text_length("\n" + escape(part_marker(total, total)), measure)

    # One estimate of the source budget serves every pass (it is a ratio, not a promise:
    # `_fit` re-splits any part that still comes out too long).
    src_budget, guess = _source_budget(md, total, fmt, limit - reserve(10), measure)
    guess = max(2, guess)
    while True:
        room = limit - reserve(guess)
        parts = _fit(md, fmt, room, min(src_budget, room), measure, 0)
        if not number_parts or len(str(len(parts))) <= len(str(guess)):
            break
        guess = len(parts)
    if not number_parts or len(parts) <= 1:
        return parts
    total = len(parts)
    return [f"{p}\n{escape(part_marker(i, total))}" for i, p in enumerate(parts, 1)]


def render_preview(
    md: str, *, dialect: str, limit: int, measure: Measure = "utf16", ellipsis: str = " …"
) -> str:
    """A streaming preview: the beginning of `md` converted to `dialect`, at most `limit`
    units, ending with `ellipsis` when text was left out. Only the head of a long text is
    converted, so calling it once per edit stays cheap. Blank input gives "".

    Raises:
        ValueError: unknown dialect, or `limit` below `MIN_RENDER_LIMIT`.
    """
    if dialect not in FORMATTERS:
        raise ValueError(f"unknown dialect {dialect!r}; known: {sorted(FORMATTERS)}")
    if limit < MIN_RENDER_LIMIT:
        raise ValueError(f"limit must be at least {MIN_RENDER_LIMIT}, got {limit}")
    tail = _MARKER_ESCAPE.get(dialect, str)(ellipsis)
    budget = limit - text_length(tail, measure)
    heads = split_chunks(md, limit=budget, measure=measure)
    if not heads:
        return ""
    parts = render_parts(heads[0], dialect=dialect, limit=budget, measure=measure,
                         number_parts=False)
    if not parts:
        return ""
    if len(heads) > 1 or len(parts) > 1:
        return parts[0] + tail
    return parts[0]


def render_reply(
    md: str, *, dialect: str, limit: int, measure: Measure = "utf16"
) -> tuple[list[str], bool]:
    """The parts to send for the Markdown reply `md` in `dialect` (one of `DIALECT_NAMES`),
    and whether they carry the dialect's markup (False for plain text). `MARKDOWN` is split
    only; every other dialect is converted and split by `render_parts`.

    Raises:
        ValueError: unknown dialect, or `limit` below `MIN_RENDER_LIMIT`.
    """
    if dialect == MARKDOWN:
        if limit < MIN_RENDER_LIMIT:
            raise ValueError(f"limit must be at least {MIN_RENDER_LIMIT}, got {limit}")
        return (split_message(md, limit=limit, measure=measure) if md else []), True
    return render_parts(md, dialect=dialect, limit=limit, measure=measure), dialect != PLAIN
