"""Telegram's HTML parse mode, as strict as the real Bot API: used by the fake server."""

from __future__ import annotations

from html.parser import HTMLParser

__all__ = ["EntityError", "visible_text"]

_ALLOWED = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler",
            "a", "code", "pre", "blockquote", "tg-emoji"}


class EntityError(ValueError):
    """Raised with Telegram's wording for text it cannot parse."""


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.out: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _ALLOWED:
            raise EntityError(f'Unsupported start tag "{tag}"')
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            raise EntityError(f'Unmatched end tag "{tag}"')
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.out.append(data)


def visible_text(html: str) -> str:
    """The text a user sees for `html`; raises `EntityError` when Telegram would refuse it."""
    checker = _Checker()
    checker.feed(html)
    checker.close()
    if checker.stack:
        raise EntityError(f'Can\'t find end tag corresponding to start tag "{checker.stack[-1]}"')
    return "".join(checker.out)
