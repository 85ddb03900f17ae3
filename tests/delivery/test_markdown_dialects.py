"""Markdown → Telegram HTML / MarkdownV2, Slack mrkdwn, Discord and plain text."""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from hermes_common.text import (
    render_parts,
    render_preview,
    text_length,
    to_discord,
    to_plain,
    to_slack_mrkdwn,
    to_telegram_html,
    to_telegram_markdown_v2,
)

MD = MarkdownIt("commonmark").enable("strikethrough")
MDV2_SPECIAL = set("_*[]()~`>#+-=|{}.!\\")


class MarkdownV2Error(AssertionError):
    pass


def _code_end(s: str, i: int, closer: str) -> int:
    """Index of the unescaped `closer` after i; every backslash inside must escape ` or \\."""
    while i < len(s):
        if s[i] == "\\":
            if i + 1 >= len(s) or s[i + 1] not in "`\\":
                raise MarkdownV2Error(f"bad escape in code at {i}: {s[i:i + 10]!r}")
            i += 2
        elif s.startswith(closer, i):
            return i
        elif s[i] == "`":
            raise MarkdownV2Error(f"unescaped backtick inside code at {i}")
        else:
            i += 1
    raise MarkdownV2Error("unterminated code entity")


def check_markdown_v2(s: str) -> None:
    """Raise MarkdownV2Error unless `s` is valid Telegram MarkdownV2 (as far as we emit it)."""
    stack: list[str] = []

    def toggle(mark: str) -> None:
        if stack and stack[-1] == mark:
            stack.pop()
        elif mark in stack:
            raise MarkdownV2Error(f"interleaved entity {mark!r} in {stack}")
        else:
            stack.append(mark)

    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            if i + 1 >= len(s) or not 1 <= ord(s[i + 1]) <= 126:
                raise MarkdownV2Error(f"bad escape at {i}")
            i += 2
            continue
        if c == "`":
            if s.startswith("```", i):
                nl = s.find("\n", i)
                if nl < 0:
                    raise MarkdownV2Error("pre without newline")
                i = _code_end(s, nl + 1, "```") + 3
            else:
                i = _code_end(s, i + 1, "`") + 1
            continue
        if c == ">" and (i == 0 or s[i - 1] == "\n"):
            i += 1
            continue
        if c == "_" and s.startswith("__", i):
            toggle("__")
            i += 2
            continue
        if c == "|" and s.startswith("||", i):
            toggle("||")
            i += 2
            continue
        if c in "*_~":
            toggle(c)
        elif c == "[":
            stack.append("[")
        elif c == "]":
            if not stack or stack[-1] != "[" or not s.startswith("(", i + 1):
                raise MarkdownV2Error(f"stray ] at {i}")
            stack.pop()
            j = i + 2
            while j < len(s) and s[j] != ")":
                j += 2 if s[j] == "\\" else 1
            if j >= len(s):
                raise MarkdownV2Error("unterminated link url")
            i = j + 1
            continue
        elif c in MDV2_SPECIAL:
            raise MarkdownV2Error(f"unescaped {c!r} at {i}: {s[max(0, i - 15):i + 15]!r}")
        i += 1
    if stack:
        raise MarkdownV2Error(f"unclosed entities {stack}")


class _TagChecker(HTMLParser):
    ALLOWED = {"b", "i", "s", "u", "code", "pre", "a", "blockquote"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        assert tag in self.ALLOWED, tag
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack.pop() == tag, tag

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def check_telegram_html(s: str) -> str:
    """Assert tags are allowed and balanced, no bare & or <; return the visible text."""
    assert not re.search(r"&(?!amp;|lt;|gt;|quot;)", s), s
    checker = _TagChecker()
    checker.feed(s)
    checker.close()
    assert checker.stack == []
    return "".join(checker.text)


RICH = """# Title *with* emphasis

Some *italic*, **bold**, ~~strike~~, `code <x> & \\` tick` and [a link](https://ex.com/?a=1&b=(2)).
Math: 2 * 3 * 4 = 24, a_b_c, snake_case_name, 1. not a list, #hashtag, {braces} | pipe!

- item one
- item *two*
  - nested - with dash.
1. first
2. second

> quoted text
> > nested quote

```python
def f(x):
    return x < 3 and "`" != "\\\\"
```

***

@everyone hello @here ![img](https://img.example/a.png) <https://auto.link/x_y>
"""


def test_telegram_html_escapes_text() -> None:
    out = to_telegram_html("Watch out: <script>alert(1)</script>, a & b, x<y and y>x")
    assert "&lt;script&gt;" in out
    assert "<script" not in out
    assert "a &amp; b" in out
    assert "x&lt;y" in out and "y&gt;x" in out
    assert check_telegram_html(out) == "Watch out: <script>alert(1)</script>, a & b, x<y and y>x"


def test_telegram_html_entities_and_language_class() -> None:
    out = to_telegram_html(RICH)
    visible = check_telegram_html(out)
    assert "<b>Title <i>with</i> emphasis</b>" in out
    assert "<s>strike</s>" in out
    assert '<pre><code class="language-python">' in out
    assert "return x &lt; 3" in out
    assert '<a href="https://ex.com/?a=1&amp;b=(2)">a link</a>' in out
    assert "<blockquote>" in out
    assert "• item one" in visible
    assert "2 * 3 * 4 = 24" in visible


def test_telegram_html_link_href_is_attribute_escaped() -> None:
    out = to_telegram_html('[x](https://e.com/?q="a"&r=<b>)')
    assert check_telegram_html(out) == "x"
    assert '"a"' not in out.split(">", 1)[0].split("href=", 1)[1][1:-1]


@pytest.mark.parametrize("char", sorted(MDV2_SPECIAL))
def test_markdown_v2_escapes_every_special_character(char: str) -> None:
    out = to_telegram_markdown_v2(f"before {char} after {char}{char} end")
    check_markdown_v2(out)
    assert out.count("\\" + char) >= 1


def test_markdown_v2_rich_document_is_valid() -> None:
    out = to_telegram_markdown_v2(RICH)
    check_markdown_v2(out)
    assert "*Title _with_ emphasis*" in out
    assert "2 \\* 3 \\* 4 \\= 24" in out
    assert "• item one" in out and "\\- item" not in out
    assert "1\\. first" in out
    assert "```python\n" in out
    assert '"\\`" != "\\\\\\\\"' in out
    assert "[a link](https://ex.com/?a=1&b=(2\\))" in out
    assert ">quoted text" in out


def test_markdown_v2_checker_catches_mistakes() -> None:
    for bad in ["a.b", "*open", "`code", "x - y", "[t](u", "``` \\n ```"]:
        with pytest.raises(MarkdownV2Error):
            check_markdown_v2(bad)


MD_ALPHABET = st.sampled_from(
    list("ab xy\n_*[]()~`>#+-=|{}.!\\<&") + ["**", "```", "\n\n", "- ", "1. ", "> ", "😀",
                                               "[l](http://e.com/a)", "`c`", "~~s~~"]
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(MD_ALPHABET, max_size=60))
def test_property_markdown_v2_output_always_valid(pieces: list[str]) -> None:
    check_markdown_v2(to_telegram_markdown_v2("".join(pieces)))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(MD_ALPHABET, max_size=60))
def test_property_telegram_html_output_always_valid(pieces: list[str]) -> None:
    check_telegram_html(to_telegram_html("".join(pieces)))


def test_slack_mrkdwn_links_and_escaping() -> None:
    out = to_slack_mrkdwn(
        "**Bold** and *it* and ~~gone~~: [the docs](https://ex.com/a?b=1&c=2), a & b <tag>\n\n"
        "```js\nif (a < b && c) {}\n```"
    )
    assert "*Bold*" in out and "_it_" in out and "~gone~" in out
    assert "<https://ex.com/a?b=1&c=2|the docs>" in out
    assert "a &amp; b &lt;tag&gt;" in out
    assert "```\nif (a &lt; b &amp;&amp; c) {}\n```" in out
    assert "<tag>" not in out


def test_slack_link_label_cannot_break_out() -> None:
    out = to_slack_mrkdwn("[a|b>c](https://x.example/p|q)")
    assert out.count("<") == 1 and out.count(">") == 1
    assert out.startswith("<https://x.example/p%7Cq|")


def test_discord_neutralises_mass_mentions_outside_code() -> None:
    out = to_discord("Hey @everyone and @here!\n\n```\n@everyone in code\n```")
    assert "@everyone and" not in out and "@here!" not in out
    assert "@\u200beveryone and @\u200bhere!" in out
    assert "\n@everyone in code\n" in out


def test_discord_keeps_markdown() -> None:
    src = "**bold** `code` [l](https://e.com)\n\n```py\nx = 1\n```"
    assert to_discord(src) == src


def _words(s: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9]+", s)


def test_plain_fallback_keeps_every_word() -> None:
    out = to_plain(RICH)
    assert "**" not in out and "<b>" not in out
    plain_words = _words(out)
    for word in _words(RICH.replace("```python", "```")):
        assert word in plain_words, word


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["alpha", "beta", "**", "*", "_", "`", " ", "\n", "# ", "> ",
                                 "- ", "~~", "[x](http://e.com/p)", "gamma"]), max_size=50))
def test_property_plain_keeps_words(pieces: list[str]) -> None:
    src = "".join(pieces)
    infos = "".join(t.info for t in MD.parse(src) if t.type == "fence" and t.content.strip())
    got = Counter(re.sub("[^a-z]", "", to_plain(src) + infos))
    assert got == Counter(re.sub("[^a-z]", "", src))


@pytest.mark.parametrize(
    ("dialect", "measure", "limit"),
    [
        ("telegram_html", "utf16", 4_096),
        ("telegram_markdown_v2", "utf16", 4_096),
        ("slack_mrkdwn", "chars", 3_000),
        ("discord", "chars", 2_000),
        ("plain", "utf16", 1_000),
    ],
)
def test_render_parts_each_part_fits_and_is_valid(dialect: str, measure: str, limit: int) -> None:
    src = (RICH + "\n\nSpecial heavy: " + "a.b-c!(d) " * 60 + "\n\n") * 8
    parts = render_parts(src, dialect=dialect, limit=limit, measure=measure)  # type: ignore[arg-type]
    assert len(parts) > 1
    for i, part in enumerate(parts, 1):
        assert text_length(part, measure) <= limit  # type: ignore[arg-type]
        if dialect == "telegram_markdown_v2":
            check_markdown_v2(part)
            assert part.endswith(f"\\({i}/{len(parts)}\\)")
        elif dialect == "telegram_html":
            check_telegram_html(part)
            assert part.endswith(f"({i}/{len(parts)})")


def test_render_parts_regrows_when_escaping_expands() -> None:
    src = "." * 3_000
    parts = render_parts(src, dialect="telegram_markdown_v2", limit=1_000)
    assert all(len(p) <= 1_000 for p in parts)
    joined = "".join(re.sub(r"\n\\\(\d+/\d+\\\)$", "", p) for p in parts)
    assert joined == "\\." * 3_000


def test_render_parts_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        render_parts("x", dialect="irc", limit=4_000)
    with pytest.raises(ValueError):
        render_parts("x", dialect="plain", limit=10)
    assert render_parts("   ", dialect="plain", limit=4_000) == []


@pytest.mark.parametrize(
    "src",
    ["*a*_b_", "*a*`c`*b*", "***x***", "*a _b_ c*", "[**b** `c`](http://x.y/(z))",
     "# [link](http://a.b) *x*", "[![a](b.png)](http://c.d)", "- > quote\n- ```py\n  code\n  ```",
     "> ```\n> code\n> ```", "a\\\nb", "Setext\n===", "    indented code", "<b>html</b>",
     "__init__ and _x_", "~~a~~~~b~~", "**a****b**", "```\n```", "```lang\n```"],
)
def test_tricky_inputs_stay_valid(src: str) -> None:
    check_markdown_v2(to_telegram_markdown_v2(src))
    check_telegram_html(to_telegram_html(src))


def test_adjacent_italics_are_not_read_as_underline() -> None:
    out = to_telegram_markdown_v2("*a*_b_")
    assert "__" not in out
    check_markdown_v2(out)


@pytest.mark.parametrize("dialect", ["telegram_html", "telegram_markdown_v2", "slack_mrkdwn"])
def test_render_preview_is_valid_and_fits(dialect: str) -> None:
    src = "Intro *text* here.\n\n```python\n" + "\n".join(f"x{i} = {i} < 5" for i in range(900))
    preview = render_preview(src, dialect=dialect, limit=500)
    assert text_length(preview) <= 500
    assert preview.startswith(("Intro <i>text</i>", "Intro _text_"))
    assert preview.endswith(" …")
    if dialect == "telegram_markdown_v2":
        check_markdown_v2(preview)
    elif dialect == "telegram_html":
        check_telegram_html(preview)
    assert render_preview("short *one*", dialect=dialect, limit=500).endswith(("one</i>", "one_"))
    assert render_preview("  ", dialect=dialect, limit=500) == ""


def test_empty_link_text_shows_the_url() -> None:
    assert to_telegram_html("[](https://e.com/x)") == '<a href="https://e.com/x">https://e.com/x</a>'
    out = to_telegram_markdown_v2("[](https://e.com/x)")
    check_markdown_v2(out)
    assert out == "[https://e\\.com/x](https://e.com/x)"
    assert to_plain("[](https://e.com/x)") == "https://e.com/x"


def test_render_parts_numbering_with_many_parts() -> None:
    parts = render_parts("word & more " * 3_000, dialect="telegram_html", limit=300)
    total = len(parts)
    assert total >= 100
    for i, part in enumerate(parts, 1):
        assert len(part) <= 300
        assert part.endswith(f"\n({i}/{total})")
        check_telegram_html(part)
