"""Page bytes → clean text or markdown (blocking: run it in a thread).

HTML goes through trafilatura (headings, lists, links, tables as markdown). Its full
extraction costs about 0.5 µs per byte of text-bearing markup, so the page is parsed once with
lxml and stripped of what never carries reading text (scripts, styles, SVG, templates) first;
a page whose remaining text is still huge (more than `FULL_EXTRACTION_MAX_CHARS`) is turned
into plain text by trafilatura's fast `html2txt` instead, since it will be condensed anyway.
Plain text, JSON and XML bodies are decoded and returned as they are.
"""

from __future__ import annotations

import functools
from configparser import ConfigParser
from dataclasses import dataclass

__all__ = ["FULL_EXTRACTION_MAX_CHARS", "Extracted", "extract_page"]

FULL_EXTRACTION_MAX_CHARS = 200_000
_NOISE = ("script", "style", "noscript", "svg", "template", "iframe", "object", "embed",
          "canvas", "math")
_TEXT_TYPES = ("text/plain", "text/markdown", "text/csv", "application/json", "text/xml",
               "application/xml")


@dataclass(frozen=True, slots=True)
class Extracted:
    title: str
    text: str
    method: str  # "markdown" | "text" | "raw"


@functools.cache
def _config() -> ConfigParser:
    # trafilatura and lxml load with the first page (about 0.2 s and 10 MB): a gateway whose
    # web tools are off, or not yet used, never pays for them.
    from trafilatura.settings import use_config

    config = use_config()
    config.set("DEFAULT", "MIN_EXTRACTED_SIZE", "1")  # short pages are pages too
    config.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")  # its signal timeout needs the main thread
    return config


def _decode(body: bytes, charset: str | None) -> str:
    for enc in (charset, "utf-8"):
        if enc:
            try:
                return body.decode(enc)
            except (LookupError, UnicodeDecodeError):
                continue
    return body.decode("utf-8", errors="replace")


def extract_page(body: bytes, *, content_type: str, charset: str | None,
                 url: str) -> Extracted:
    """Readable text of a fetched body. Raises ValueError for a type that carries no text
    (images, archives, …) or HTML without readable text."""
    ctype = content_type.lower()
    if ctype in _TEXT_TYPES or ctype.endswith("+json"):
        return Extracted("", _decode(body, charset).strip(), "raw")
    if ctype not in ("text/html", "application/xhtml+xml", "") and not ctype.startswith("text/"):
        raise ValueError(f"the page is {ctype}, not text or HTML")
    if not body.strip():
        raise ValueError("the page is empty")
    import lxml.etree
    import lxml.html
    import trafilatura

    parser = None
    if charset:
        try:
            "".encode(charset)
            parser = lxml.html.HTMLParser(encoding=charset)
        except (LookupError, ValueError):
            parser = None
    try:
        tree = lxml.html.document_fromstring(body, parser=parser)
    except (lxml.etree.ParserError, ValueError, LookupError) as exc:
        raise ValueError(f"the page could not be parsed as HTML ({type(exc).__name__})") from None
    title_el = tree.find(".//title")
    title = " ".join((title_el.text_content() if title_el is not None else "").split())
    lxml.etree.strip_elements(tree, *_NOISE, with_tail=False)
    lxml.etree.strip_tags(tree, lxml.etree.Comment)
    body_el = tree.find("body")
    visible = len((body_el if body_el is not None else tree).text_content())
    text: str | None = None
    method = "markdown"
    if visible <= FULL_EXTRACTION_MAX_CHARS:
        text = trafilatura.extract(tree, url=url, output_format="markdown", include_links=True,
                                   include_tables=True, include_comments=False, fast=True,
                                   config=_config())
    if not text:
        method = "text"
        text = trafilatura.html2txt(tree)
    if not text or not text.strip():
        raise ValueError("the page has no readable text")
    return Extracted(title, text.strip(), method)
