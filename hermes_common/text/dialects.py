"""Platform dialects: how each piece of parsed Markdown is written for one platform.

A `Dialect` turns already-parsed pieces (text, inline code, emphasis, links, code blocks,
quotes, list markers) into the platform's syntax with its escaping. The walkers in
`hermes_common.text.markdown` (markdown-it-py tokens) and `hermes_common.text.fastmd` (pyromark
events) call these methods; they never raise for any `str`.
"""

from __future__ import annotations

import html

__all__ = [
    "DIALECTS",
    "Dialect",
    "escape_markdown_v2",
    "fence_lang",
]

_MDV2_SPECIAL = "\\_*[]()~`>#+-=|{}.!"
_MDV2_SPECIAL_BYTES = tuple((c.encode(), b"\\" + c.encode()) for c in _MDV2_SPECIAL)
_BYTES_FROM = 2048
_SLACK_URL = str.maketrans({"|": "%7C", ">": "%3E", "<": "%3C", " ": "%20"})
_HTML_TAGS = {"strong": "b", "em": "i", "s": "s"}
_MARKS = {"strong": "*", "em": "_", "s": "~"}
_LANG_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+#.-")


def escape_markdown_v2(text: str) -> str:
    """Escape every Telegram MarkdownV2 special character of plain `text`."""
    # A replace per special present beats str.translate (which maps char by char); the
    # backslash goes first so nothing is escaped twice. On long text (the walker escapes all
    # of a reply's text in one call) replacing in the UTF-8 bytes is faster still.
    if len(text) > _BYTES_FROM:
        data = text.encode("utf-8", "surrogatepass")
        for special, escaped in _MDV2_SPECIAL_BYTES:
            if special in data:
                data = data.replace(special, escaped)
        return data.decode("utf-8", "surrogatepass")
    for c in _MDV2_SPECIAL:
        if c in text:
            text = text.replace(c, "\\" + c)
    return text


def _escape_code_v2(text: str) -> str:
    if "\\" in text:
        text = text.replace("\\", "\\\\")
    if "`" in text:
        text = text.replace("`", "\\`")
    return text


def fence_lang(info: str) -> str:
    """The language word of a fence info string, reduced to safe characters."""
    words = info.split(None, 1)
    if not words:
        return ""
    word = words[0]
    if _LANG_OK.issuperset(word):
        return word[:32]
    return "".join([c for c in word if c in _LANG_OK])[:32]


class Dialect:
    """Plain-text rendering; subclasses override the pieces their platform formats."""

    bullet = "• "
    quote_prefix = "> "
    # True when `text` maps each character on its own (text(a + b) == text(a) + text(b), and
    # "\x00" maps to itself) and one call on all of a reply's text joined costs less than a
    # call per piece: the pyromark walker then converts all text at once.
    bulk_text = False
    # The first characters of an inline piece before which `separator` may give something;
    # the pyromark walker does not ask for pieces starting otherwise.
    separator_first = ""

    def text(self, s: str) -> str:
        return s

    def code_inline(self, s: str) -> str:
        return s

    def wrap(self, kind: str, inner: str) -> str:
        return inner

    def link(self, inner: str, plain: str, href: str) -> str:
        if not href or plain.strip() == href or href in ("mailto:" + plain,):
            return inner
        return f"{inner} ({self.text(href)})"

    def image(self, alt: str, src: str) -> str:
        return self.text(f"{alt} ({src})" if alt else src)

    def fence(self, content: str, lang: str, quoted: bool) -> str:
        return self.text(content.rstrip("\n"))

    def heading(self, inner: str) -> str:
        return self.wrap("strong", inner)

    def blockquote(self, inner: str, nested: bool) -> str:
        prefix = self.text(self.quote_prefix)
        return prefix + inner.replace("\n", "\n" + prefix)

    def number(self, n: str, delim: str) -> str:
        return self.text(f"{n}{delim} ")

    def hr(self) -> str:
        return self.text("———")

    def separator(self, before: str, after: str) -> str:
        """Text to put between two adjacent inline pieces so their markers stay apart."""
        return ""


class _TelegramHTML(Dialect):
    def text(self, s: str) -> str:
        if "&" in s or "<" in s or ">" in s:  # most pieces hold none: skip three replaces
            return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return s

    def code_inline(self, s: str) -> str:
        return f"<code>{self.text(s)}</code>"

    def wrap(self, kind: str, inner: str) -> str:
        tag = _HTML_TAGS[kind]
        return f"<{tag}>{inner}</{tag}>"

    def link(self, inner: str, plain: str, href: str) -> str:
        if not href:
            return inner
        if "&" in href or "<" in href or ">" in href or '"' in href or "'" in href:
            href = html.escape(href, quote=True)
        return f'<a href="{href}">{inner}</a>'

    def image(self, alt: str, src: str) -> str:
        return self.link(self.text(alt or src), alt, src)

    def fence(self, content: str, lang: str, quoted: bool) -> str:
        body = self.text(content.rstrip("\n"))
        if lang:
            return f'<pre><code class="language-{lang}">{body}</code></pre>'
        return f"<pre>{body}</pre>"

    def blockquote(self, inner: str, nested: bool) -> str:
        if nested:
            return super().blockquote(inner, nested)
        return f"<blockquote>{inner}</blockquote>"


class _TelegramMDV2(Dialect):
    bulk_text = True
    separator_first = "_"

    def text(self, s: str) -> str:
        return escape_markdown_v2(s)

    def code_inline(self, s: str) -> str:
        return f"`{_escape_code_v2(s)}`"

    def wrap(self, kind: str, inner: str) -> str:
        mark = _MARKS[kind]
        return f"{mark}{inner}{mark}"

    def link(self, inner: str, plain: str, href: str) -> str:
        if not href:
            return inner
        if "\\" in href or ")" in href:
            href = href.replace("\\", "\\\\").replace(")", "\\)")
        return f"[{inner}]({href})"

    def image(self, alt: str, src: str) -> str:
        return self.link(self.text(alt or src), alt, src)

    def fence(self, content: str, lang: str, quoted: bool) -> str:
        body = content.rstrip("\n")
        if quoted:
            return "\n".join(self.code_inline(line) if line else "" for line in body.split("\n"))
        return f"```{lang}\n{_escape_code_v2(body)}\n```"

    def number(self, n: str, delim: str) -> str:
        if (delim == "." or delim == ")") and n.isdigit():  # common: no scan needed
            return f"{n}\\{delim} "
        return escape_markdown_v2(f"{n}{delim} ")

    def separator(self, before: str, after: str) -> str:
        # "__" would be read as underline: split adjacent italics with an empty bold entity.
        if after.startswith("_") and before.endswith("_") and not before.endswith("\\_"):
            return "**"
        return ""

    def blockquote(self, inner: str, nested: bool) -> str:
        prefix = "\\> " if nested else ">"
        return prefix + inner.replace("\n", "\n" + prefix)


class _SlackMrkdwn(Dialect):
    def text(self, s: str) -> str:
        if "&" in s or "<" in s or ">" in s:
            return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return s

    def code_inline(self, s: str) -> str:
        if "`" in s or not s.strip():
            return self.text(s)
        return f"`{self.text(s)}`"

    def wrap(self, kind: str, inner: str) -> str:
        mark = _MARKS[kind]
        return f"{mark}{inner}{mark}"

    def link(self, inner: str, plain: str, href: str) -> str:
        if not href:
            return inner
        url = href
        if "|" in url or ">" in url or "<" in url or " " in url:
            url = url.translate(_SLACK_URL)
        label = plain.replace("|", "¦").strip()
        if not label or label == href:
            return f"<{url}>"
        return f"<{url}|{self.text(label)}>"

    def image(self, alt: str, src: str) -> str:
        return self.link(alt, alt, src)

    def fence(self, content: str, lang: str, quoted: bool) -> str:
        body = self.text(content.rstrip("\n")).replace("```", "`\u200b``")
        return f"```\n{body}\n```"

    def blockquote(self, inner: str, nested: bool) -> str:
        return "> " + inner.replace("\n", "\n> ")


DIALECTS: dict[str, Dialect] = {
    "plain": Dialect(),
    "telegram_html": _TelegramHTML(),
    "telegram_markdown_v2": _TelegramMDV2(),
    "slack_mrkdwn": _SlackMrkdwn(),
}
