"""What a voice reply says (`speakable`): the reply without Markdown, code or link targets,
cut at a sentence end with a pointer to the text."""

from __future__ import annotations

from gateway.media.speech import speakable


def test_markdown_code_links_and_tables_are_not_read_out() -> None:
    said = speakable("# Plan\n\n**Go** to [the page](https://example.com/x) now.\n\n"
                     "```sh\nrm -rf build\n```\n\n| day | time |\n|---|---|\n| Mon | 8 |\n")
    assert "**" not in said and "#" not in said and "https://" not in said
    assert "rm -rf" not in said and "(code: see the text message)" in said
    assert "---" not in said and "Mon, 8" in said
    assert said.startswith("Plan\n\nGo to the page now.")


def test_a_long_reply_is_cut_at_a_sentence_end_with_a_pointer_to_the_text() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(200))
    said = speakable(text, max_chars=300)
    assert len(said) <= 300
    assert said.endswith("is here. The rest is in the text message.")
    assert speakable("```\nonly code\n```") == "(code: see the text message)"
    assert speakable("   ") == ""
