"""Golden output of `render_parts` / `render_preview`: speed work must not change a byte.

`render_golden.json` holds, per case, digests of the parts (with their count, to make a
failure readable). It was recorded from the implementation before the issue-6
speed-up; regenerate it only for an intended output change:

    PYTHONPATH=. .venv/bin/python tests/delivery/test_render_golden.py --regen
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_common.text import markdown, render_parts, render_preview

GOLDEN = Path(__file__).with_name("render_golden.json")
DIALECTS = ["telegram_html", "telegram_markdown_v2", "slack_mrkdwn", "discord", "plain"]
PLATFORM = {
    "telegram_html": ("utf16", 4_096),
    "telegram_markdown_v2": ("utf16", 4_096),
    "slack_mrkdwn": ("chars", 3_000),
    "discord": ("chars", 2_000),
    "plain": ("utf16", 4_096),
}


def bench_reply(size: int = 50_000) -> str:
    """The benchmark's 50 KB reply (a frozen copy of benchmarks/bench_delivery.build_reply)."""
    section = (
        "## Results 🚀\n\n"
        "The run finished with **3 warnings** and *no errors*; see [the log](https://ex.com/"
        "log?id=42&v=2) for details. Values like `x < y && y > z` matter 👍🏽.\n\n"
        "- first item with a [link](https://example.org/a_b)\n"
        "- second item 2 * 3 = 6\n"
        "  - nested item with `code`\n"
        "1. step one\n2. step two\n\n"
        "> A quoted remark, with emphasis on *this*.\n\n"
        "```python\n"
        "def handler(event: dict) -> str:\n"
        "    if event.get('type') == \"message\" and len(event) > 2:\n"
        "        return f\"ok {event['id']}\"  # 😀\n"
        "    return 'skip'\n"
        "```\n\n"
    )
    return (section * (size // len(section) + 1))[:size]


def _long_code() -> str:
    body = "\n".join(f"    value_{i} = compute(x[{i}], '<&>') * {i}  # `tick` {i}"
                     for i in range(400))
    return f"Intro *text* before the code.\n\n```python\n{body}\n```\n\nAfter the **code**."


def _emoji() -> str:
    line = "Emoji 😀👍🏽🇺🇸 family 👨‍👩‍👧 and text é́ combining, *bold 🚀* `code 😀` end."
    return "\n".join(f"{i}: {line}" for i in range(300))


def _nested_lists() -> str:
    items = []
    for i in range(120):
        items.append(f"- level one {i} with **bold** and a [link](https://e.com/x_{i})")
        items.append(f"  - level two {i} with `code_{i}` and *it*")
        items.append(f"    - level three {i} 2 * 3 = 6 {{braces}} | pipe!")
        items.append(f"1. ordered {i}\n2. ordered again\n\n   loose paragraph {i}")
    return "\n".join(items)


def _inline_code() -> str:
    para = ("Run `a_b*c[d](e)~f\\g|h{i}.j!k#l+m-n=o>p<q&r` then ``x `y` z`` and "
            "`` ` `` plus `<b>&amp;</b>` and `\\` and `` foo\\`bar `` done. ")
    return "\n\n".join(para * 6 for _ in range(25))


def _links() -> str:
    row = ("See [snake_case link](https://e.com/a_b_(c)) and [paren)](https://e.com/x\\)y) "
           "<https://a.b/c_d> <me_you@example.com> ![img_alt *x*](https://i.e/p_q.png) "
           "[**bold** link](https://e.com/?a=1&b=2|3 \"title\") [](https://empty.e/) "
           "[ref_link] text.\n\n[ref_link]: https://ref.e/r_s\n\n")
    return row * 60


def _quotes() -> str:
    block = ("> quoted *line* with `code`\n> > nested quote_x\n> ```js\n> let a = 1 < 2;\n"
             "> ```\n\nParagraph between ~~struck~~ text.\n\n---\n\n# Heading *one*\n\n"
             "Setext\n======\n\n    indented code <x>\n\n<div>html block & stuff</div>\n\n"
             "inline <span>html</span> & hard  \nbreak\\\nagain\n\n")
    return block * 40


def _huge_word() -> str:
    return "start " + "x" * 9_000 + " middle " + "😀" * 3_000 + " end"


def _nine_k() -> str:
    code = "\n".join(f"print('line {i}')" for i in range(150))
    prose = "Lorem ipsum dolor sit amet, *consectetur* adipiscing elit. " * 40
    return f"{prose}\n\n```python\n{code}\n```\n\n{prose}\n\n```\nno lang\n{code}\n```"


def _messy() -> str:
    return ("line\r\nwith crlf\r\n\r\nlone \ud83d surrogate and \udc00 low " * 200
            + "\n```\nunclosed fence " + "z " * 2_000)


def _corpus(seed: int, count: int) -> Iterator[tuple[str, str]]:
    pieces = list("ab xy_*[]()`>#+-=|{}.!\\<&~") + [
        "word", "words here", " ", "\n", "\n\n", "**bold**", "*it*", "_it_", "`code`",
        "~~gone~~", "[link](http://e.com/x_y)", "![pic](p.png)", "<http://a.b/c>", "&amp;",
        "😀", "👍🏽", "\n- ", "\n  - ", "\n> ", "\n# ", "\n1. ", "\n***\n",
        "\n```py\nx = 1 < 2\n```\n", "\n```\nplain code\n", "\n    indented code\n", "\\\n",
        "\n~~~\ntilde fence\n~~~\n", "``", "<b>", "</b>", "\n> ```\n", "é\u0301",
    ]
    rng = random.Random(seed)
    for i in range(count):
        n = rng.choice((20, 80, 300, 900))
        yield f"random/{seed}_{i}", "".join(rng.choice(pieces) for _ in range(n))


def _inputs() -> dict[str, str]:
    return {
        "long_code": _long_code(),
        "emoji": _emoji(),
        "nested_lists": _nested_lists(),
        "inline_code": _inline_code(),
        "links": _links(),
        "quotes": _quotes(),
        "huge_word": _huge_word(),
        "nine_k": _nine_k(),
        "messy": _messy(),
        "blank": " \n\n\t ",
        "short": "Hi *there* `x_y` [l](http://a.b/c_d)",
    }


def _digest(parts: list[str]) -> str:
    """"<part count>:<lengths digest>:<content digest>" (the lengths tell a size change from a
    content change)."""
    lens = ",".join(str(len(p)) for p in parts).encode()
    blob = json.dumps(parts, ensure_ascii=True).encode()
    return (f"{len(parts)}:{hashlib.sha256(lens).hexdigest()[:8]}:"
            f"{hashlib.sha256(blob).hexdigest()[:20]}")


def cases() -> Iterator[tuple[str, dict[str, Any]]]:
    """(case id, render_parts keyword arguments + "md" + optional "preview"/"backend")."""
    big = bench_reply()
    for dialect in DIALECTS:
        measure, limit = PLATFORM[dialect]
        yield f"bench/{dialect}", {"md": big, "dialect": dialect, "limit": limit,
                                   "measure": measure}
        yield f"bench/{dialect}/1000/chars/unnumbered", {
            "md": big, "dialect": dialect, "limit": 1_000, "measure": "chars",
            "number_parts": False}
    for name, md in _inputs().items():
        for dialect in DIALECTS:
            for measure in ("utf16", "chars"):
                for limit in (256, 1_000, 4_096):
                    yield f"{name}/{dialect}/{measure}/{limit}", {
                        "md": md, "dialect": dialect, "limit": limit, "measure": measure}
            yield f"{name}/{dialect}/preview", {"md": md, "dialect": dialect, "limit": 700,
                                                "measure": "utf16", "preview": True}
            if dialect != "discord" and len(md) < 15_000:
                yield f"{name}/{dialect}/markdown-it-py", {
                    "md": md, "dialect": dialect, "limit": 1_000, "measure": "utf16",
                    "backend": "markdown-it-py"}
    for name, md in _corpus(6, 120):
        for dialect in DIALECTS:
            yield f"{name}/{dialect}", {"md": md, "dialect": dialect, "limit": 256,
                                        "measure": "utf16"}


def run_case(case: dict[str, Any]) -> list[str]:
    kw = dict(case)
    backend = kw.pop("backend", None)
    preview = kw.pop("preview", False)
    md = kw.pop("md")
    saved = markdown.BACKEND
    if backend:
        markdown.BACKEND = backend
    try:
        if preview:
            return [render_preview(md, **kw)]
        return render_parts(md, **kw)
    finally:
        markdown.BACKEND = saved


def _load() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


_CASES = dict(cases())


@pytest.mark.parametrize("group", sorted({k.split("/")[0] for k in _CASES}))
def test_render_parts_matches_golden_output(group: str) -> None:
    golden = _load()
    ids = [k for k in _CASES if k.split("/")[0] == group]
    mismatched = [k for k in ids if _digest(run_case(_CASES[k])) != golden[k]]
    assert not mismatched, f"{len(mismatched)} of {len(ids)} changed, e.g. {mismatched[:5]}"


def test_render_golden_covers_every_case() -> None:
    assert set(_load()) == set(_CASES)


if __name__ == "__main__" and sys.argv[1:] == ["--regen"]:
    GOLDEN.write_text(json.dumps({k: _digest(run_case(c)) for k, c in _CASES.items()},
                                 indent=0, sort_keys=True) + "\n", encoding="utf-8")
