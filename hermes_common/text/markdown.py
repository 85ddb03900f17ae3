"""Markdown → platform dialects through a real Markdown parser (no regex rewriting).

Each converter takes CommonMark (+ ~~strikethrough~~; raw HTML is treated as text) and returns
text that the platform accepts in its formatting mode: every special character outside an
entity is escaped and every entity is closed. None of them raises for any `str` input.

Two parsers can feed the same dialects: pyromark (pulldown-cmark, compiled; about 0.1 ms per
10 KB, used when installed) and markdown-it-py (pure Python, about 1 ms per KB; the fallback
and the reference the fast path is tested against). `BACKEND` names the one in use.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from hermes_common.text.dialects import DIALECTS, Dialect, escape_markdown_v2, fence_lang
from hermes_common.text.measure import sanitize
from hermes_common.text.split import code_fence_ranges

_fast_render: Callable[[str, Dialect], str] | None
try:
    from hermes_common.text.fastmd import render_events as _fast_render
except ImportError:  # pyromark not installed
    _fast_render = None

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

__all__ = [
    "BACKEND",
    "Dialect",
    "render_markdown",
    "to_telegram_html",
    "to_telegram_markdown_v2",
    "to_slack_mrkdwn",
    "to_discord",
    "to_plain",
    "escape_markdown_v2",
]

BACKEND = "pyromark" if _fast_render is not None else "markdown-it-py"

_parser: MarkdownIt | None = None
_parser_lock = threading.Lock()


def _markdown_it() -> MarkdownIt:
    """The markdown-it-py parser, built on first use: with pyromark installed it serves only
    as the reference and fallback, so a started gateway need not import it (start-up)."""
    global _parser
    if _parser is None:
        with _parser_lock:
            if _parser is None:
                from markdown_it import MarkdownIt

                _parser = MarkdownIt("commonmark", {"html": False}).enable("strikethrough")
    return _parser

_MASS_MENTIONS = ("@everyone", "@here")


class _Walker:
    """Walks a token stream once, keeping block and inline frames on explicit stacks."""

    def __init__(self, dialect: Dialect) -> None:
        self.d = dialect

    def render(self, md: str) -> str:
        tokens = _markdown_it().parse(sanitize(md))
        d = self.d
        frames: list[tuple[str, list[str], Token | None]] = [("root", [], None)]
        quote_depth = 0
        item_depth = 0
        for tok in tokens:
            typ = tok.type
            parts = frames[-1][1]
            if typ == "inline":
                heading = frames[-1][0] == "heading"
                parts.append(self.inline(tok.children or [], heading))
            elif typ in ("fence", "code_block") and not tok.content.strip():
                if tok.info.strip():
                    parts.append(d.text(f"{tok.markup}{tok.info}".strip()))
            elif typ in ("fence", "code_block"):
                parts.append(d.fence(tok.content, fence_lang(tok.info), quote_depth > 0))
            elif typ == "hr":
                parts.append(d.hr())
            elif typ in ("html_block", "html_inline"):
                parts.append(d.text(tok.content.rstrip("\n")))
            elif typ.endswith("_open") and typ != "paragraph_open":
                kind = typ[:-5]
                if kind == "blockquote":
                    quote_depth += 1
                elif kind == "list_item":
                    item_depth += 1
                frames.append((kind, [], tok))
            elif typ.endswith("_close") and typ != "paragraph_close":
                kind, inner, open_tok = frames.pop()
                if kind == "blockquote":
                    quote_depth -= 1
                    out = d.blockquote("\n\n".join(inner), quote_depth > 0 or item_depth > 0)
                elif kind == "list_item":
                    item_depth -= 1
                    out = self.item(inner, frames[-1][2], open_tok)
                elif kind in ("bullet_list", "ordered_list"):
                    out = "\n".join(inner)
                elif kind == "heading":
                    out = d.heading("".join(inner))
                else:
                    out = "\n\n".join(inner)
                frames[-1][1].append(out)
        while len(frames) > 1:
            _, inner, _ = frames.pop()
            frames[-1][1].append("\n\n".join(inner))
        return "\n\n".join(p for p in frames[0][1] if p)

    def item(self, inner: list[str], list_tok: Token | None, item_tok: Token | None) -> str:
        d = self.d
        if list_tok is not None and list_tok.type == "ordered_list_open" and item_tok is not None:
            delim = item_tok.markup or "."
            marker = d.number(item_tok.info or "1", delim)
            width = len(item_tok.info or "1") + len(delim) + 1
        else:
            marker = d.text(d.bullet)
            width = len(d.bullet)
        body = "\n".join(p for p in inner if p)
        pad = " " * width
        lines = body.split("\n")
        return marker + "\n".join([lines[0], *(pad + ln if ln else ln for ln in lines[1:])])

    def inline(self, children: list[Token], heading: bool) -> str:
        d = self.d
        active: Counter[str] = Counter()
        if heading:
            active["strong"] += 1
        stack: list[tuple[str, list[str], list[str], Token | None]] = [("", [], [], None)]
        for tok in children:
            typ = tok.type
            _, out, plain, _ = stack[-1]
            if typ in ("text", "text_special", "html_inline"):
                out.append(d.text(tok.content))
                plain.append(tok.content)
            elif typ == "code_inline":
                out.append(d.code_inline(tok.content))
                plain.append(tok.content)
            elif typ in ("softbreak", "hardbreak"):
                out.append("\n")
                plain.append("\n")
            elif typ == "image":
                alt = "".join(c.content for c in tok.children or []) or tok.content
                if active["link"]:
                    out.append(d.text(alt))
                else:
                    out.append(d.image(alt, str(tok.attrGet("src") or "")))
                plain.append(alt)
            elif typ.endswith("_open"):
                kind = typ[:-5]
                active[kind] += 1
                stack.append((kind, [], [], tok))
            elif typ.endswith("_close") and len(stack) > 1:
                kind, inner_out, inner_plain, open_tok = stack.pop()
                active[kind] -= 1
                inner = "".join(inner_out)
                text = "".join(inner_plain)
                if kind == "link" and open_tok is not None:
                    href = str(open_tok.attrGet("href") or "")
                    if not text.strip():
                        inner, text = d.text(href), href
                    rendered = d.link(inner, text, href)
                elif kind in ("strong", "em", "s") and active[kind] == 0 and inner:
                    rendered = d.wrap(kind, inner)
                else:
                    rendered = inner
                parent = stack[-1][1]
                if parent and rendered:
                    sep = d.separator(parent[-1], rendered)
                    if sep:
                        parent.append(sep)
                parent.append(rendered)
                stack[-1][2].append(text)
            else:
                out.append(d.text(tok.content))
                plain.append(tok.content)
        while len(stack) > 1:
            _, inner_out, inner_plain, _ = stack.pop()
            stack[-1][1].append("".join(inner_out))
            stack[-1][2].append("".join(inner_plain))
        result = "".join(stack[0][1])
        return result


_REFERENCE = {name: _Walker(d) for name, d in DIALECTS.items()}


def render_markdown(md: str, dialect: str, *, backend: str | None = None) -> str:
    """Markdown → `dialect` ("plain", "telegram_html", "telegram_markdown_v2",
    "slack_mrkdwn") with the fastest parser available, or the one `backend` names
    ("pyromark" / "markdown-it-py"). Must not raise for any `md`.

    Raises:
        KeyError: unknown dialect or backend.
    """
    d = DIALECTS[dialect]
    use = backend or BACKEND
    if use == "pyromark":
        if _fast_render is None:
            raise KeyError("pyromark is not installed")
        return _fast_render(sanitize(md), d)
    if use != "markdown-it-py":
        raise KeyError(use)
    return _REFERENCE[dialect].render(md)


def to_telegram_html(md: str) -> str:
    """Markdown → Telegram `parse_mode=HTML` (b, i, s, code, pre+language class, a, blockquote)."""
    return render_markdown(md, "telegram_html")


def to_telegram_markdown_v2(md: str) -> str:
    """Markdown → Telegram `parse_mode=MarkdownV2`, every special escaped outside entities."""
    return render_markdown(md, "telegram_markdown_v2")


def to_slack_mrkdwn(md: str) -> str:
    """Markdown → Slack mrkdwn (*bold*, _italic_, ~strike~, <url|text>, &amp; &lt; &gt;)."""
    return render_markdown(md, "slack_mrkdwn")


def to_plain(md: str) -> str:
    """Markdown → readable plain text; every word of the text (and link targets) is kept."""
    return render_markdown(md, "plain")


def to_discord(md: str) -> str:
    """Markdown → Discord: passed through (Discord renders Markdown) with mass mentions
    (@everyone, @here) outside code fences neutralised by a zero-width space."""
    text = sanitize(md)
    out: list[str] = []
    pos = 0
    for start, end in code_fence_ranges(text):
        out.append(_defuse(text[pos:start]))
        out.append(text[start:end])
        pos = end
    out.append(_defuse(text[pos:]))
    return "".join(out)


def _defuse(segment: str) -> str:
    for word in _MASS_MENTIONS:
        segment = segment.replace(word, "@\u200b" + word[1:])
    return segment
