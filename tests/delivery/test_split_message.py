"""Splitting long replies: limits in the platform's unit, balanced fences, sane boundaries."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from hermes_common.text import split_message, truncate_preview, utf16_length
from hermes_common.text.measure import text_length
from hermes_common.text.split import MIN_LIMIT, split_chunks

MARKER = re.compile(r"\n\((\d+)/(\d+)\)$")
MD = MarkdownIt("commonmark")


def _strip_marker(part: str) -> str:
    return MARKER.sub("", part)


def _fence_lines(part: str) -> list[str]:
    return [ln.strip() for ln in part.split("\n") if ln.strip().startswith("```")]


def _long_reply() -> str:
    langs = ["python", "bash", "typescript"]
    blocks = []
    i = 0
    while sum(len(b) for b in blocks) < 9_000:
        lang = langs[i % 3]
        code = "\n".join(f"line_{i}_{k} = compute({k}, 'x')  # step {k}" for k in range(45))
        blocks.append(
            f"## Part {i}\n\nHere is an explanation with `inline code` and **bold** words "
            f"that goes on for a while so the paragraph is long enough to matter. " * 2
            + f"\n\n```{lang}\n{code}\n```\n"
        )
        i += 1
    return "\n".join(blocks)


def test_9000_char_reply_parts_are_balanced_and_keep_language() -> None:
    reply = _long_reply()
    assert len(reply) >= 9_000
    parts = split_message(reply, limit=1_500)
    assert len(parts) > 5
    total = len(parts)
    for i, part in enumerate(parts, 1):
        assert utf16_length(part) <= 1_500
        assert part.endswith(f"\n({i}/{total})")
        body = _strip_marker(part)
        fences = _fence_lines(body)
        assert len(fences) % 2 == 0, f"part {i} has unbalanced fences: {fences}"
        openings = fences[0::2]
        assert all(f in ("```python", "```bash", "```typescript") for f in openings)
        tokens = MD.parse(body)
        for tok in tokens:
            if tok.type == "fence":
                assert tok.info in ("python", "bash", "typescript")
                assert tok.map is not None
        assert body.count("```") == len(fences) * 1


def test_reopened_fence_carries_the_language_of_the_cut_block() -> None:
    code = "\n".join(f"echo step {k}" for k in range(200))
    reply = f"Run this:\n\n```bash\n{code}\n```\n\nDone."
    parts = [_strip_marker(p) for p in split_message(reply, limit=400)]
    assert len(parts) >= 4
    for part in parts[1:-1]:
        assert part.startswith("```bash\n")
        assert part.rstrip().endswith("```")
    lines = [ln for p in parts for ln in p.split("\n") if ln.startswith("echo step")]
    assert lines == [f"echo step {k}" for k in range(200)]


def test_emoji_heavy_text_respects_utf16_limit() -> None:
    text = " ".join("😀🎉👍🏽" + "ok" for _ in range(600))
    parts = split_message(text, limit=200, measure="utf16")
    assert all(utf16_length(p) <= 200 for p in parts)
    chars_parts = split_message(text, limit=200, measure="chars")
    assert all(len(p) <= 200 for p in chars_parts)
    assert len(parts) > len(chars_parts)


def test_numbering_is_counted_within_the_limit() -> None:
    text = "word " * 5_000
    parts = split_message(text, limit=100)
    assert len(parts) >= 100
    assert parts[-1].endswith(f"({len(parts)}/{len(parts)})")
    assert all(len(p) <= 100 for p in parts)
    unnumbered = split_message(text, limit=100, number_parts=False)
    assert not any(MARKER.search(p) for p in unnumbered)


def test_never_splits_inside_a_word_when_a_space_exists() -> None:
    words = [f"w{i}" + "x" * (i % 9) for i in range(800)]
    parts = split_message(" ".join(words), limit=120, number_parts=False)
    seen = [w for p in parts for w in p.split()]
    assert seen == words


def test_never_splits_inside_inline_code_span() -> None:
    filler = "a" * 40
    text = f"{filler} `code span with several spaces inside it` tail " * 30
    parts = split_message(text, limit=90, number_parts=False)
    for part in parts:
        assert part.count("`") % 2 == 0, part


def test_paragraph_boundary_preferred_over_line_and_space() -> None:
    para_a = "alpha " * 30
    para_b = "beta " * 30
    parts = split_message(f"{para_a.strip()}\n\n{para_b.strip()}", limit=250, number_parts=False)
    assert parts == [para_a.strip(), para_b.strip()]


def test_single_10000_char_word_is_hard_cut_without_loss() -> None:
    word = "x" * 10_000
    parts = split_message(word, limit=4_096, number_parts=False)
    assert all(len(p) <= 4_096 for p in parts)
    assert "".join(parts) == word


def test_code_block_longer_than_limit_with_one_huge_line() -> None:
    reply = "```json\n" + '{"k": "' + "v" * 5_000 + '"}\n```'
    parts = split_message(reply, limit=1_000)
    assert all(utf16_length(p) <= 1_000 for p in parts)
    for part in parts:
        body = _strip_marker(part)
        assert body.startswith("```json\n")
        assert body.endswith("```")
    content = "".join(_strip_marker(p)[len("```json\n") : -len("\n```")] for p in parts)
    assert content == '{"k": "' + "v" * 5_000 + '"}'


def test_crlf_and_lone_surrogates_are_cleaned() -> None:
    text = ("line one\r\nline two\rline three \ud83d alone \ud83d\ude00 pair\n\n" * 200)
    parts = split_message(text, limit=300)
    for part in parts:
        assert "\r" not in part
        part.encode("utf-8")
        assert utf16_length(part) <= 300
    assert "😀" in parts[0]
    assert "\ufffd" in parts[0]


def test_blank_and_small_inputs() -> None:
    assert split_message("", limit=100) == []
    assert split_message(" \n\n ", limit=100) == []
    assert split_message("hello", limit=100) == ["hello"]
    with pytest.raises(ValueError):
        split_message("hello", limit=MIN_LIMIT - 1)


def test_truncate_preview_keeps_head_and_closes_fence() -> None:
    text = "Intro line.\n\n```python\n" + "\n".join(f"x{i} = {i}" for i in range(500))
    preview = truncate_preview(text, 300)
    assert utf16_length(preview) <= 300
    assert preview.startswith("Intro line.")
    assert preview.endswith(" …")
    assert len(_fence_lines(preview)) % 2 == 0
    assert truncate_preview("short", 300) == "short"


ALPHABET = st.sampled_from(
    list("abcdefghij XYZ0123456789.,;:!?-*_#>()[]") + ["\n", "\n\n", "😀", "👍🏽", "中文", "é", "  "]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(ALPHABET, min_size=0, max_size=400),
    limit=st.integers(min_value=MIN_LIMIT, max_value=300),
    measure=st.sampled_from(["utf16", "chars"]),
    numbered=st.booleans(),
)
def test_property_parts_fit_and_keep_every_word_in_order(
    pieces: list[str], limit: int, measure: str, numbered: bool
) -> None:
    text = "".join(pieces)
    parts = split_message(text, limit=limit, measure=measure, number_parts=numbered)  # type: ignore[arg-type]
    for part in parts:
        assert text_length(part, measure) <= limit  # type: ignore[arg-type]
    content = [_strip_marker(p) if numbered and len(parts) > 1 else p for p in parts]
    assert "".join("".join(content).split()) == "".join(text.split())


@settings(max_examples=60, deadline=None)
@given(
    blocks=st.lists(
        st.tuples(
            st.sampled_from(["python", "rust", "", "c++"]),
            st.lists(st.text(alphabet="abc xyz=()_😀", max_size=60), min_size=1, max_size=40),
            st.lists(st.sampled_from(["hello", "world", "`tick`", "\n"]), max_size=40).map(
                " ".join
            ),
        ),
        min_size=1,
        max_size=6,
    ),
    limit=st.integers(min_value=64, max_value=400),
)
def test_property_code_blocks_balanced_in_every_part(
    blocks: list[tuple[str, list[str], str]], limit: int
) -> None:
    text = "\n\n".join(f"{prose}\n\n```{lang}\n" + "\n".join(lines) + "\n```"
                       for lang, lines, prose in blocks)
    parts = split_chunks(text, limit=limit)
    for part in parts:
        assert utf16_length(part) <= limit
        fences = _fence_lines(part)
        assert len(fences) % 2 == 0, (part, fences)
    langs = {lang for lang, _, _ in blocks}
    for part in parts:
        for tok in MD.parse(part):
            if tok.type == "fence":
                assert tok.info in langs
