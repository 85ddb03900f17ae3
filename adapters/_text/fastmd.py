"""Markdown → a platform dialect from pyromark's event stream (pulldown-cmark, compiled).

One pass over the parser's start/end/text events with explicit block and inline stacks. The
output matches the markdown-it-py walker in `adapters._text.markdown` (the reference) for
CommonMark + strikethrough; differences are the parsers' own (pulldown-cmark also reads
`~single~` tildes as strikethrough, and ordered lists count up from their first number).

Importing this module raises `ImportError` when pyromark is not installed.
"""

from __future__ import annotations

from typing import Any

import pyromark

from adapters._text.dialects import Dialect, fence_lang

__all__ = ["parse_events", "render_events"]

_OPTIONS = pyromark.Options.ENABLE_STRIKETHROUGH
_INLINE = {"Emphasis": "em", "Strong": "strong", "Strikethrough": "s"}
_INLINE_END = frozenset({"Emphasis", "Strong", "Strikethrough", "Link", "Image"})


def parse_events(md: str) -> tuple[Any, ...]:
    """pyromark's events for `md` (CommonMark + strikethrough)."""
    return tuple(pyromark.events(md, options=_OPTIONS))


def _item(d: Dialect, bullet: str, inner: list[str], number: int | None) -> str:
    if number is not None:
        n = str(number)
        marker = d.number(n, ".")
        width = len(n) + 2
    else:
        marker = bullet
        width = len(d.bullet)
    if len(inner) == 1:
        body = inner[0]
    else:
        body = "\n".join([p for p in inner if p])
    if "\n" not in body:
        return marker + body
    pad = " " * width
    lines = body.split("\n")
    return marker + "\n".join([lines[0], *(pad + ln if ln else ln for ln in lines[1:])])


def render_events(md: str, d: Dialect) -> str:
    """Render sanitized Markdown `md` in dialect `d`. Must not raise for any `str`."""
    text_fn = d.text
    bullet = d.text(d.bullet)
    # Block frames: [kind, parts, list start (lists) / item number (items), items seen]
    frames: list[list[Any]] = [["root", [], None, 0]]
    parts: list[str] = frames[0][1]
    # The open inline run (paragraph, heading or tight item text): pieces of the innermost
    # open element (`out`, `plain`) and the elements around it (`outer`).
    out: list[str] | None = None
    plain: list[str] = []
    outer: list[tuple[str, list[str], list[str], str]] = []
    active = {"strong": 0, "em": 0, "s": 0, "link": 0}
    quote_depth = 0
    item_depth = 0
    code: list[str] | None = None
    code_info = ""
    for ev in pyromark.events(md, options=_OPTIONS):
        if type(ev) is dict:
            val = ev.get("Text")
            if val is not None:
                if code is not None:
                    code.append(val)
                elif out is not None:
                    out.append(text_fn(val))
                    plain.append(val)
                else:
                    out, plain = [text_fn(val)], [val]
                    active["strong"] = 1 if frames[-1][0] == "heading" else 0
                continue
            val = ev.get("Start")
            if val is not None:
                if type(val) is str:
                    kind = _INLINE.get(val)
                    if kind is not None:
                        if out is None:
                            out, plain = [], []
                            active["strong"] = 1 if frames[-1][0] == "heading" else 0
                        active[kind] += 1
                        outer.append((kind, out, plain, ""))
                        out, plain = [], []
                        continue
                    name, attrs = val, None
                else:
                    ((name, attrs),) = val.items()
                if name == "Link" or name == "Image":
                    if out is None:
                        out, plain = [], []
                        active["strong"] = 1 if frames[-1][0] == "heading" else 0
                    href = attrs["dest_url"]
                    if attrs["link_type"] == "Email" and not href.startswith("mailto:"):
                        href = "mailto:" + href
                    if name == "Link":
                        active["link"] += 1
                        outer.append(("link", out, plain, href))
                    else:
                        outer.append(("image", out, plain, href))
                    out, plain = [], []
                    continue
                if out is not None:
                    parts.append(_finish_run(out, plain, outer) if outer else "".join(out))
                    out = None
                if name == "Paragraph":
                    continue
                if name == "CodeBlock":
                    code = []
                    code_info = attrs["Fenced"] if isinstance(attrs, dict) else ""
                    continue
                if name == "BlockQuote":
                    quote_depth += 1
                    frames.append(["blockquote", [], None, 0])
                elif name == "Item":
                    item_depth += 1
                    parent = frames[-1]
                    number = None if parent[2] is None else parent[2] + parent[3]
                    parent[3] += 1
                    frames.append(["item", [], number, 0])
                elif name == "List":
                    frames.append(["list", [], attrs, 0])
                elif name == "Heading":
                    frames.append(["heading", [], None, 0])
                else:  # HtmlBlock and anything not enabled: plain container
                    frames.append([name, [], None, 0])
                parts = frames[-1][1]
                continue
            val = ev.get("End")
            if val is not None:
                if type(val) is str and val in _INLINE_END:
                    if outer and out is not None:
                        kind, parent_out, parent_plain, href = outer.pop()
                        text = "".join(plain)
                        if kind == "image":
                            rendered = text_fn(text) if active["link"] else d.image(text, href)
                        else:
                            inner = "".join(out)
                            active[kind] -= 1
                            if kind == "link":
                                if not text.strip():
                                    inner, text = text_fn(href), href
                                rendered = d.link(inner, text, href)
                            elif active[kind] == 0 and inner:
                                rendered = d.wrap(kind, inner)
                            else:
                                rendered = inner
                            if parent_out and rendered:
                                sep = d.separator(parent_out[-1], rendered)
                                if sep:
                                    parent_out.append(sep)
                        parent_out.append(rendered)
                        parent_plain.append(text)
                        out, plain = parent_out, parent_plain
                    continue
                if code is not None:
                    content = "".join(code)
                    code = None
                    if content.strip():
                        lang = fence_lang(code_info)
                        parts.append(d.fence(content, lang, quote_depth > 0))
                    elif code_info.strip():
                        parts.append(text_fn(("```" + code_info).strip()))
                    continue
                if out is not None:
                    parts.append(_finish_run(out, plain, outer) if outer else "".join(out))
                    out = None
                if val == "Paragraph":
                    continue
                kind, inner_parts, number, _ = frames.pop()
                if kind == "blockquote":
                    quote_depth -= 1
                    done = d.blockquote("\n\n".join(inner_parts),
                                        quote_depth > 0 or item_depth > 0)
                elif kind == "item":
                    item_depth -= 1
                    done = _item(d, bullet, inner_parts, number)
                elif kind == "list":
                    done = "\n".join(inner_parts)
                elif kind == "heading":
                    done = d.heading("".join(inner_parts))
                elif kind == "HtmlBlock":  # shown as text, laid out like a paragraph
                    lines = "".join(inner_parts).strip().split("\n")
                    done = text_fn("\n".join(line.strip() for line in lines))
                else:
                    done = "\n\n".join(inner_parts)
                parts = frames[-1][1]
                parts.append(done)
                continue
            val = ev.get("Code")
            if val is None:
                val = ev.get("InlineHtml")
                if val is not None:
                    if out is None:
                        out, plain = [], []
                        active["strong"] = 1 if frames[-1][0] == "heading" else 0
                    out.append(text_fn(val))
                    plain.append(val)
                    continue
            else:
                if out is None:
                    out, plain = [], []
                    active["strong"] = 1 if frames[-1][0] == "heading" else 0
                out.append(d.code_inline(val))
                plain.append(val)
                continue
            val = ev.get("Html")
            if val is not None:
                parts.append(val)
            continue
        if ev == "SoftBreak" or ev == "HardBreak":
            if out is None:
                out, plain = [], []
                active["strong"] = 1 if frames[-1][0] == "heading" else 0
            out.append("\n")
            plain.append("\n")
        elif ev == "Rule":
            if out is not None:
                parts.append(_finish_run(out, plain, outer))
                out = None
            parts.append(d.hr())
    if out is not None:
        parts.append(_finish_run(out, plain, outer))
    while len(frames) > 1:
        _, inner_parts, _, _ = frames.pop()
        frames[-1][1].append("\n\n".join(inner_parts))
    return "\n\n".join(p for p in frames[0][1] if p)


def _finish_run(out: list[str], plain: list[str],
                outer: list[tuple[str, list[str], list[str], str]]) -> str:
    """Close the elements an inline run left open (their markers are dropped)."""
    while outer:
        _, parent_out, parent_plain, _ = outer.pop()
        parent_out.append("".join(out))
        parent_plain.append("".join(plain))
        out, plain = parent_out, parent_plain
    return "".join(out)
