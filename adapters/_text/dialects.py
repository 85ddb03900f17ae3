"""Platform dialects: how each piece of parsed Markdown is written for one platform.

A `Dialect` turns already-parsed pieces (text, inline code, emphasis, links, code blocks,
quotes, list markers) into the platform's syntax with its escaping. The walkers in
`adapters._text.markdown` (markdown-it-py tokens) and `adapters._text.fastmd` (pyromark
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
_MDV2_URL = str.maketrans({"\\": "\\\\", ")": "\\)"})
_SLACK_URL = str.maketrans({"|": "%7C", ">": "%3E", "<": "%3C", " ": "%20"})
_LANG_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+#.-")


def escape_markdown_v2(text: str) -> str:
    """Escape every Telegram MarkdownV2 special character of plain `text`."""
    # A replace per special present beats str.translate (which maps char by char) on the
    # short pieces a reply is made of; the backslash goes first so nothing is escaped twice.
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
    word = info.split()[0] if info.split() else ""
    return "".join(c for c in word if c in _LANG_OK)[:32]


class Dialect:
    """Plain-text rendering; subclasses override the pieces their platform formats."""

    bullet = "• "
    quote_prefix = "> "

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
        return "\n".join(prefix + line for line in inner.split("\n"))

    def number(self, n: str, delim: str) -> str:
        return self.text(f"{n}{delim} ")

    def hr(self) -> str:
        return self.text("———")

    def separator(self, before: str, after: str) -> str:
        """Text to put between two adjacent inline pieces so their markers stay apart."""
        return ""


class _TelegramHTML(Dialect):
    def text(self, s: str) -> str:
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    def code_inline(self, s: str) -> str:
        return f"<code>{self.text(s)}</code>"

    def wrap(self, kind: str, inner: str) -> str:
        tag = {"strong": "b", "em": "i", "s": "s"}[kind]
        return f"<{tag}>{inner}</{tag}>"

    def link(self, inner: str, plain: str, href: str) -> str:
        if not href:
            return inner
        return f'<a href="{html.escape(href, quote=True)}">{inner}</a>'

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
    def text(self, s: str) -> str:
        return escape_markdown_v2(s)

    def code_inline(self, s: str) -> str:
        return f"`{_escape_code_v2(s)}`"

    def wrap(self, kind: str, inner: str) -> str:
        mark = {"strong": "*", "em": "_", "s": "~"}[kind]
        return f"{mark}{inner}{mark}"

    def link(self, inner: str, plain: str, href: str) -> str:
        if not href:
            return inner
        return f"[{inner}]({href.translate(_MDV2_URL)})"

    def image(self, alt: str, src: str) -> str:
        return self.link(self.text(alt or src), alt, src)

    def fence(self, content: str, lang: str, quoted: bool) -> str:
        body = content.rstrip("\n")
        if quoted:
            return "\n".join(self.code_inline(line) if line else "" for line in body.split("\n"))
        return f"```{lang}\n{_escape_code_v2(body)}\n```"

    def separator(self, before: str, after: str) -> str:
        # "__" would be read as underline: split adjacent italics with an empty bold entity.
        if after.startswith("_") and before.endswith("_") and not before.endswith("\\_"):
            return "**"
        return ""

    def blockquote(self, inner: str, nested: bool) -> str:
        prefix = "\\> " if nested else ">"
        return "\n".join(prefix + line for line in inner.split("\n"))


class _SlackMrkdwn(Dialect):
    def text(self, s: str) -> str:
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    def code_inline(self, s: str) -> str:
        if "`" in s or not s.strip():
            return self.text(s)
        return f"`{self.text(s)}`"

    def wrap(self, kind: str, inner: str) -> str:
        mark = {"strong": "*", "em": "_", "s": "~"}[kind]
        return f"{mark}{inner}{mark}"

    def link(self, inner: str, plain: str, href: str) -> str:
        if not href:
            return inner
        url = href.translate(_SLACK_URL)
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
        return "\n".join("> " + line for line in inner.split("\n"))


DIALECTS: dict[str, Dialect] = {
    "plain": Dialect(),
    "telegram_html": _TelegramHTML(),
    "telegram_markdown_v2": _TelegramMDV2(),
    "slack_mrkdwn": _SlackMrkdwn(),
}
