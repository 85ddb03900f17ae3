"""Long replies, UTF-16 measuring, plain-text fallback and MEDIA attachments, end to end."""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt

from tests.delivery_e2e.support import CURSOR_CHAR, TimedFakeAdapter, chat_cache
from tests.fakes.openai_server import text
from tests.integration.harness import gateway

MD = MarkdownIt("commonmark")
MARKER = re.compile(r"\n\((\d+)/(\d+)\)$")


def _long_reply() -> str:
    intro = "\n\n".join(f"Paragraph {i}: " + "lorem ipsum dolor sit amet " * 12
                        for i in range(7))
    code = "\n".join(f"    value_{i} = compute({i}) + offset  # step {i}" for i in range(110))
    outro = "\n\n".join(f"Closing note {i}: " + "consectetur adipiscing elit " * 10
                        for i in range(4))
    reply = f"{intro}\n\n```python\ndef main():\n{code}\n    return 0\n```\n\n{outro}"
    assert 8_500 <= len(reply) <= 10_000
    return reply


def _utf16(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def _strip_marker(part: str) -> str:
    return MARKER.sub("", part)


async def test_delivery_long_reply_arrives_as_numbered_balanced_parts(tmp_path, model):
    reply = _long_reply()
    model.enqueue(text(reply, chunk_chars=400, delay_s=0.01))
    fake = TimedFakeAdapter(max_length=4096)
    async with gateway(tmp_path, model, adapter=fake) as (_runner, fake):
        await fake.inject("write a lot", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=20)
        parts = fake.messages("c1")
        assert len(parts) >= 3
        assert not [s for s in fake.stamps if not s.ok], "no call may be refused (too long)"
        for i, part in enumerate(parts, 1):
            assert len(part) <= 4096
            assert CURSOR_CHAR not in part
            m = MARKER.search(part)
            assert m and (int(m[1]), int(m[2])) == (i, len(parts)), part[-20:]
            body = _strip_marker(part)
            fences = [line for line in body.split("\n") if line.startswith("```")]
            assert len(fences) % 2 == 0, f"part {i} has unbalanced fences"
            tokens = MD.parse(body)
            # A part that holds code keeps it in a python block (language reopened).
            for tok in tokens:
                if tok.type == "fence":
                    assert tok.info == "python", (i, tok.info)
            if "value_" in body:
                assert any(t.type == "fence" for t in tokens), f"part {i} lost its code block"
        # Nothing lost: every code line arrives exactly once, in order.
        bodies = "\n".join(_strip_marker(p) for p in parts)
        got = re.findall(r"value_(\d+) =", bodies)
        assert got == [str(i) for i in range(110)]
        assert "Closing note 3" in parts[-1]


async def test_delivery_utf16_measure_with_emoji(tmp_path, model):
    line = "Emoji run " + "😀" * 40 + " and 👍🏽 thumbs, café."
    reply = "\n\n".join(f"{i}: {line}" for i in range(50))
    assert len(reply) <= 4096 < _utf16(reply)  # fits by code points, not by UTF-16 units
    model.enqueue(text(reply, chunk_chars=300, delay_s=0.01))
    fake = TimedFakeAdapter(max_length=4096, length_measure="utf16")
    async with gateway(tmp_path, model, adapter=fake) as (_runner, fake):
        await fake.inject("emoji please", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=20)
        parts = fake.messages("c1")
        assert len(parts) == 2
        assert not [s for s in fake.stamps if not s.ok]
        assert all(_utf16(p) <= 4096 for p in parts)
        assert "\ufffd" not in "".join(parts)  # no surrogate pair was cut in half
        bodies = [_strip_marker(p) for p in parts]
        assert "\n\n".join(bodies) == reply


async def test_delivery_plain_text_fallback_when_formatting_rejected(tmp_path, model):
    reply = "**Done**: the file `a_b.txt` has _3_ lines and [docs](https://e.com/x)."
    model.enqueue(text(reply))
    fake = TimedFakeAdapter()
    fake.fail_next("bad_format")  # only formatted text is refused; plain text passes
    async with gateway(tmp_path, model, adapter=fake) as (runner, fake):
        await fake.inject("status?", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=10)
        messages = fake.messages("c1")
        assert len(messages) == 1
        shown = messages[0]
        assert "**" not in shown and "`" not in shown
        for word in ("Done", "a_b.txt", "3", "lines", "docs", "https://e.com/x"):
            assert word in shown
        assert fake.sent("c1")[0].formatted is False
        refused = [s for s in fake.stamps if s.error_kind is not None]
        assert [r.error_kind.value for r in refused if r.error_kind] == ["bad_format"]
        assert await runner.store.outbox_undelivered() == []


async def test_delivery_media_allow_list_end_to_end(tmp_path, model):
    picture = chat_cache(tmp_path, "c1") / "x.png"  # a file of this chat's cache
    picture.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    secret = Path("~/.ssh/id_rsa")
    model.enqueue(
        text(f"Here is the chart.\nMEDIA:{picture}"),
        text(f"Here is the key.\nMEDIA:{secret}"),
    )
    fake = TimedFakeAdapter()
    async with gateway(tmp_path, model, adapter=fake) as (_runner, fake):
        await fake.inject("chart please", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=10)
        media = fake.media("c1")
        assert len(media) == 1
        assert Path(media[0].attachments[0].path).resolve() == picture.resolve()
        assert fake.messages("c1") == ["Here is the chart."]

        await fake.inject("now send my ssh key", chat_id="c1", user_id="u1")
        await fake.wait_turns(2, timeout_s=10)
        assert len(fake.media("c1")) == 1, "the secret must never be sent"
        assert not [s for s in fake.stamps if s.op == "media" and "ssh" in (s.text or "")]
        refusal = fake.messages("c1")[-1]
        assert refusal.startswith("Here is the key.")
        assert "Attachment not sent" in refusal and "id_rsa" in refusal
        assert "MEDIA:" not in refusal
