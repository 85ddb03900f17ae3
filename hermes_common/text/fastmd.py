"""Markdown → a platform dialect from pyromark's event stream (pulldown-cmark, compiled).

One pass over the parser's start/end/text events with explicit block and inline stacks, kept
in one function's locals because it runs once per event (a 50 KB reply is ~6,000 events and
the issue-6 budget is 5 ms for all of it): raw text is collected only inside links and images,
and a dialect whose text escaping maps characters one by one converts all text in one call
(`Dialect.bulk_text`). The output matches the markdown-it-py walker in
`hermes_common.text.markdown` (the reference) for CommonMark + strikethrough; differences are the
parsers' own (pulldown-cmark also reads `~single~` tildes as strikethrough, ordered lists
count up from their first number, and the spaces after a literal backslash that ends a line
are dropped before the line break, as CommonMark says, where markdown-it-py keeps one).

Importing this module raises `ImportError` when pyromark is not installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyromark

from hermes_common.text.dialects import Dialect, fence_lang

__all__ = ["parse_events", "render_events"]

_OPTIONS = pyromark.Options.ENABLE_STRIKETHROUGH
_INLINE = {"Emphasis": "em", "Strong": "strong", "Strikethrough": "s"}
_INLINE_END = frozenset({"Emphasis", "Strong", "Strikethrough", "Link", "Image"})


def parse_events(md: str) -> tuple[Any, ...]:
    """pyromark's events for `md` (CommonMark + strikethrough)."""
    return tuple(pyromark.events(md, options=_OPTIONS))


def _item(number: int | None, bullet: str, width: int, inner: list[str], d: Dialect) -> str:
    """A list item: its marker, then its blocks with continuation lines indented under it."""
    if number is not None:
        n = str(number)
        marker = d.number(n, ".")
        width = len(n) + 2
    else:
        marker = bullet
    body = inner[0] if len(inner) == 1 else "\n".join([p for p in inner if p])
    if "\n" not in body:
        return marker + body
    pad = " " * width
    if "\n\n" not in body and body[-1] != "\n":  # no blank line: pad every line after the first
        return marker + body.replace("\n", "\n" + pad)
    lines = body.split("\n")
    return marker + "\n".join([lines[0], *(pad + ln if ln else ln for ln in lines[1:])])


def _bulk_text(events: list[Any], text_fn: Callable[[str], str]) -> Callable[[], str] | None:
    """`text_fn` applied once to every Text event joined (see `Dialect.bulk_text`): a function
    giving the converted texts in event order. None when the joiner occurs in a text."""
    texts = [ev["Text"] for ev in events if type(ev) is dict and "Text" in ev]
    converted = text_fn("\x00".join(texts)).split("\x00")
    if len(converted) != len(texts):
        return None
    return iter(converted).__next__


def _close_run(out: list[str], outer: list[tuple[str, list[str], int, str]]) -> str:
    """Join an inline run, closing the elements it left open (their markers are dropped)."""
    while outer:
        parent = outer.pop()[1]
        parent.append("".join(out))
        out = parent
    return "".join(out)


def render_events(md: str, d: Dialect) -> str:
    """Render sanitized Markdown `md` in dialect `d`. Must not raise for any `str`."""
    text_fn = d.text
    plain_text = type(d).text is Dialect.text
    events: Any = pyromark.events(md, options=_OPTIONS)
    next_text = None
    if d.bulk_text:
        events = list(events)
        next_text = _bulk_text(events, text_fn)
    separator = d.separator if d.separator_first else None
    separator_first = d.separator_first
    bullet, bullet_width = text_fn(d.bullet), len(d.bullet)
    # Block frames: [kind, parts, list start (lists) / item number (items), items seen]
    frames: list[list[Any]] = [["root", [], None, 0]]
    parts: list[str] = frames[0][1]
    # The open inline run (paragraph, heading or tight item text): the pieces of its innermost
    # open element (`out`) and the elements around it (`outer`: kind, parent pieces, where its
    # text starts in `plain`, href). `plain` collects raw text only inside links and images
    # (`capture` of them open), the only elements that read it.
    out: list[str] | None = None
    outer: list[tuple[str, list[str], int, str]] = []
    plain: list[str] = []
    capture = 0
    active = {"strong": 0, "em": 0, "s": 0, "link": 0}
    heading = 0  # 1 while a heading is open (its text is bold already)
    quote_depth = 0
    item_depth = 0
    code: list[str] | None = None
    code_info = ""
    for ev in events:
        if type(ev) is not dict:
            if ev == "SoftBreak" or ev == "HardBreak":
                if out is None:
                    out = []
                    active["strong"] = heading
                out.append("\n")
                if capture:
                    plain.append("\n")
            elif ev == "Rule":
                if out is not None:
                    parts.append(_close_run(out, outer))
                    out = None
                    plain.clear()
                    capture = 0
                parts.append(d.hr())
            continue
        if "Text" in ev:
            val = ev["Text"]
            if code is not None:
                code.append(val)
                if next_text is not None:
                    next_text()
                continue
            if out is None:
                out = []
                active["strong"] = heading
            if next_text is not None:
                out.append(next_text())
            else:
                out.append(val if plain_text else text_fn(val))
            if capture:
                plain.append(val)
            continue
        if "End" in ev:
            val = ev["End"]
            if type(val) is str and val in _INLINE_END:
                if outer and out is not None:
                    kind, parent, mark, href = outer.pop()
                    if kind == "image" or kind == "link":
                        text = "".join(plain[mark:])
                        del plain[mark:]
                        capture -= 1
                        if kind == "image":
                            rendered = text_fn(text) if active["link"] else d.image(text, href)
                            parent.append(rendered)
                            if capture:
                                plain.append(text)
                            out = parent
                            continue
                        active["link"] -= 1
                        inner = "".join(out)
                        if not text.strip():
                            inner, text = text_fn(href), href
                        rendered = d.link(inner, text, href)
                        if capture:
                            plain.append(text)
                    else:
                        inner = "".join(out)
                        count = active[kind] - 1
                        active[kind] = count
                        rendered = d.wrap(kind, inner) if count == 0 and inner else inner
                    if (separator is not None and parent and rendered
                            and rendered[0] in separator_first):
                        sep = separator(parent[-1], rendered)
                        if sep:
                            parent.append(sep)
                    parent.append(rendered)
                    out = parent
                continue
            if code is not None:
                content = "".join(code)
                code = None
                if content.strip():
                    parts.append(d.fence(content, fence_lang(code_info), quote_depth > 0))
                elif code_info.strip():
                    parts.append(text_fn(("```" + code_info).strip()))
                continue
            if out is not None:
                parts.append(_close_run(out, outer) if outer else "".join(out))
                out = None
                if capture:
                    plain.clear()
                    capture = 0
            if val == "Paragraph":
                continue
            kind, inner_parts, number, _ = frames.pop()
            if kind == "item":
                item_depth -= 1
                if number is None and len(inner_parts) == 1 and "\n" not in inner_parts[0]:
                    done = bullet + inner_parts[0]
                else:
                    done = _item(number, bullet, bullet_width, inner_parts, d)
            elif kind == "list":
                done = "\n".join(inner_parts)
            elif kind == "blockquote":
                quote_depth -= 1
                done = d.blockquote("\n\n".join(inner_parts), quote_depth > 0 or item_depth > 0)
            elif kind == "heading":
                heading = 0
                done = d.heading("".join(inner_parts))
            elif kind == "HtmlBlock":  # shown as text, laid out like a paragraph
                lines = "".join(inner_parts).strip().split("\n")
                done = text_fn("\n".join(line.strip() for line in lines))
            else:
                done = "\n\n".join(inner_parts)
            parts = frames[-1][1]
            parts.append(done)
            continue
        if "Start" in ev:
            val = ev["Start"]
            if type(val) is str:
                inline = _INLINE.get(val)
                if inline is not None:
                    if out is None:
                        out = []
                        active["strong"] = heading
                    active[inline] += 1
                    outer.append((inline, out, 0, ""))
                    out = []
                    continue
                name, attrs = val, None
            else:
                [name] = val  # a one-key dict
                attrs = val[name]
                if name == "Link" or name == "Image":
                    if out is None:
                        out = []
                        active["strong"] = heading
                    href = attrs["dest_url"]
                    if attrs["link_type"] == "Email" and not href.startswith("mailto:"):
                        href = "mailto:" + href
                    if name == "Link":
                        active["link"] += 1
                        outer.append(("link", out, len(plain), href))
                    else:
                        outer.append(("image", out, len(plain), href))
                    capture += 1
                    out = []
                    continue
            if out is not None:
                parts.append(_close_run(out, outer) if outer else "".join(out))
                out = None
                if capture:
                    plain.clear()
                    capture = 0
            if name == "Item":
                item_depth += 1
                parent_frame = frames[-1]
                start = parent_frame[2]
                number = None if start is None else start + parent_frame[3]
                parent_frame[3] += 1
                parts = []
                frames.append(["item", parts, number, 0])
            elif name == "Paragraph":
                continue
            elif name == "List":
                parts = []
                frames.append(["list", parts, attrs, 0])
            elif name == "CodeBlock":
                code = []
                code_info = attrs["Fenced"] if isinstance(attrs, dict) else ""
            elif name == "BlockQuote":
                quote_depth += 1
                parts = []
                frames.append(["blockquote", parts, None, 0])
            elif name == "Heading":
                heading = 1
                parts = []
                frames.append(["heading", parts, None, 0])
            else:  # HtmlBlock and anything not enabled: plain container
                parts = []
                frames.append([name, parts, None, 0])
            continue
        val = ev.get("Code")
        if val is not None:
            if out is None:
                out = []
                active["strong"] = heading
            out.append(d.code_inline(val))
            if capture:
                plain.append(val)
            continue
        val = ev.get("InlineHtml")
        if val is not None:
            if out is None:
                out = []
                active["strong"] = heading
            out.append(text_fn(val))
            if capture:
                plain.append(val)
            continue
        val = ev.get("Html")
        if val is not None:
            parts.append(val)
    if out is not None:
        parts.append(_close_run(out, outer))
    while len(frames) > 1:
        inner_parts = frames.pop()[1]
        frames[-1][1].append("\n\n".join(inner_parts))
    return "\n\n".join([p for p in frames[0][1] if p])
