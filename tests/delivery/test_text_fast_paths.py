"""The shortcuts taken for speed give the same answers as the plain definitions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_common.text import (
    escape_markdown_v2,
    render_parts,
    sanitize,
    text_length,
    to_slack_mrkdwn,
    to_telegram_html,
    to_telegram_markdown_v2,
    utf16_length,
)
from hermes_common.text.dialects import fence_lang
from hermes_common.text.markdown import render_markdown

MDV2_SPECIAL = "\\_*[]()~`>#+-=|{}.!"
ANY_TEXT = st.text(st.characters(exclude_categories=()))  # lone surrogates included


def _escape_char_by_char(s: str) -> str:
    return "".join("\\" + c if c in MDV2_SPECIAL else c for c in s)


@settings(max_examples=300)
@given(ANY_TEXT, st.integers(0, 3))
def test_escape_markdown_v2_short_and_long_text_escape_each_special(s: str, grow: int) -> None:
    text = s * (1 + grow * 2_000 // max(1, len(s)))  # long inputs take the UTF-8 bytes path
    assert escape_markdown_v2(text) == _escape_char_by_char(text)


def test_escape_markdown_v2_long_text_keeps_lone_surrogates_and_emoji() -> None:
    text = ("a.b \ud83d lone 😀 *x* \udc00 " * 400)
    assert escape_markdown_v2(text) == _escape_char_by_char(text)


@settings(max_examples=300)
@given(ANY_TEXT)
def test_measuring_and_sanitizing_match_their_definitions(s: str) -> None:
    units = len(s.encode("utf-16-le", "surrogatepass")) // 2
    assert utf16_length(s) == units == text_length(s, "utf16")
    assert text_length(s, "chars") == len(s)
    clean = sanitize(s)
    assert "\r" not in clean
    assert all(not 0xD800 <= ord(c) <= 0xDFFF for c in clean)
    if "\r" not in s and not any(0xD800 <= ord(c) <= 0xDFFF for c in s):
        assert clean == s


def test_sanitize_merges_a_split_surrogate_pair_and_replaces_a_lone_one() -> None:
    assert sanitize("a\ud83d\ude00b") == "a😀b"
    assert sanitize("x\ud83dy\r\nz") == "x\ufffdy\nz"


def test_fence_lang_keeps_the_first_word_in_safe_characters() -> None:
    assert fence_lang("python extra words") == "python"
    assert fence_lang("  c++  ") == "c++"
    assert fence_lang("py<th>on\tx") == "python"
    assert fence_lang("") == fence_lang("   ") == ""
    assert fence_lang("x" * 40) == "x" * 32


def test_text_holding_nul_renders_like_any_other_character() -> None:
    # The MarkdownV2 walker escapes a reply's text in one call, joined by NUL; a NUL in the
    # text itself must not shift the pieces.
    src = "a\x00b. *c\x00* [l\x00nk](http://x.y/z) `c\x00de`"
    assert to_telegram_markdown_v2(src) == "a\x00b\\. _c\x00_ [l\x00nk](http://x.y/z) `c\x00de`"
    assert to_telegram_markdown_v2("a\x00b. *c*") == "a\x00b\\. _c_"


@settings(max_examples=200)
@given(st.lists(st.sampled_from(["a", ".", "_", "*x*", "\x00", "😀", " ", "\n", "`c`"]),
                max_size=40))
def test_markdown_v2_bulk_escaping_matches_the_reference_walker(pieces: list[str]) -> None:
    src = "".join(pieces).replace("\x00", "")  # markdown-it-py rewrites NUL, pyromark does not
    assert render_markdown(src, "telegram_markdown_v2", backend="pyromark") == render_markdown(
        src, "telegram_markdown_v2", backend="markdown-it-py")


def test_html_and_slack_escape_only_where_needed() -> None:
    assert to_telegram_html("plain words") == "plain words"
    assert to_telegram_html("a < b & c > d") == "a &lt; b &amp; c &gt; d"
    assert to_slack_mrkdwn("a < b & c > d") == "a &lt; b &amp; c &gt; d"
    assert to_telegram_html("[x](http://e.com/?a=1&b='2')") == (
        '<a href="http://e.com/?a=1&amp;b=&#x27;2&#x27;">x</a>')
    assert to_slack_mrkdwn("[x y](http://e.com/a b|c)") == "[x y](http://e.com/a b|c)"
    assert to_slack_mrkdwn("[x y](<http://e.com/a b|c>)") == "<http://e.com/a%20b%7Cc|x y>"


def test_ordered_list_numbers_are_escaped_in_markdown_v2() -> None:
    assert to_telegram_markdown_v2("3. three\n4. four") == "3\\. three\n4\\. four"
    parts = render_parts("1. one\n\n" * 2_000, dialect="telegram_markdown_v2", limit=4_096)
    assert all("\\. one" in p for p in parts)
