"""Images in the history (issue 18): with a vision main model an image goes as an image part
in its own turn only; after the turn the vision model (`auxiliary.vision_model`) describes it
and the description is stored in place of the image's line, so a later turn's request and a
compression's summary request carry the description, never the image bytes. A turn cut off
by a restart and re-run sends its images again (read back from the chat cache)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.runner import GatewayRunner
from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest, Script, hang, text
from tests.gateway.runtime_harness import KEY, runner_for
from tests.media.files import jpeg
from tests.multiuser.support import until

DESCRIPTION = "A red square hanging on a white wall."
SUMMARY = "The user showed a red square on a wall and asked about it."


def _respond(req: RecordedRequest) -> Script:
    if req.body["model"] == "vision-m":
        return text(DESCRIPTION)
    if "tools" not in req.body:
        return text(SUMMARY)  # the compression summariser (auxiliary model)
    last = req.body["messages"][-1]["content"]
    words = last if isinstance(last, str) else last[0]["text"]
    return text(f"answer to {words.split()[0]}")


@pytest.fixture
async def vmodel() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer(responder=_respond) as server:
        yield server


def _photo(home: Path) -> str:
    path = home / "cache" / "fake" / "photo.jpg"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(jpeg((640, 480)))
    return str(path)


def _main(model: FakeOpenAIServer) -> list[RecordedRequest]:
    return [r for r in model.requests if "tools" in r.body]


async def _stored_users(runner: GatewayRunner) -> list[str]:
    session = await runner.store.find_by_session_key(KEY)
    assert session is not None
    return [str(m["content"]) for m in await runner.store.load_history(session.id)
            if m["role"] == "user"]


async def _wait_stored(runner: GatewayRunner, words: str) -> None:
    for _ in range(500):
        if any(words in u for u in await _stored_users(runner)):
            return
        await until(lambda: True, "a pause", 1)
    raise AssertionError(f"{words!r} never stored")


async def test_later_turns_and_compression_read_the_description_not_the_image(
        tmp_path: Path, vmodel: FakeOpenAIServer) -> None:
    async with runner_for(tmp_path, vmodel, providers__main__vision=True,
                          auxiliary__vision_model="vision-m",
                          compression__protect_first_n=0) as (runner, fake):
        await fake.inject("photo: what is this?", attachments=[_photo(tmp_path)])
        await fake.wait_for(lambda: "answer to photo:" in fake.messages("c1"), 20)
        [first] = _main(vmodel)
        assert any(p["type"] == "image_url" for p in first.body["messages"][-1]["content"])
        await _wait_stored(runner, DESCRIPTION)  # described after the turn, in the background
        [described] = [r for r in vmodel.requests if r.body["model"] == "vision-m"]
        assert described.received_at > first.received_at
        for i in range(3):
            sent, _ = await fake.inject(f"later{i} " + "and some detail about the wall " * 20)
            await fake.wait_for(lambda s=sent: any(t.reply_to == s.message_id
                                                   for t in fake.turns_completed), 20)
        later = _main(vmodel)[-1].body["messages"]
        [image_turn] = [m for m in later if m["role"] == "user" and "photo:" in str(m)]
        assert isinstance(image_turn["content"], str)
        assert DESCRIPTION in image_turn["content"] and "vision_analyze can look" not in \
            image_turn["content"]
        assert "image_url" not in str(later) and "base64" not in str(later)

        asked = len(vmodel.requests)
        await fake.inject("/compress")
        try:
            await fake.wait_for(lambda: any("ompress" in m for m in fake.messages("c1")), 30)
        except TimeoutError:
            raise AssertionError(fake.messages("c1")) from None
        summary_requests = [r for r in vmodel.requests[asked:] if "tools" not in r.body
                            and r.body["model"] == "fake-model"]
        assert summary_requests, [m for m in fake.messages("c1") if "ompress" in m]
        body = str([r.body for r in summary_requests])
        assert DESCRIPTION in body and "base64" not in body and "image_url" not in body


async def test_a_turn_rerun_after_a_restart_sends_its_images_again(
        tmp_path: Path, vmodel: FakeOpenAIServer) -> None:
    vmodel.enqueue(hang(120))
    async with runner_for(tmp_path, vmodel, providers__main__vision=True,
                          auxiliary__vision_model="vision-m",
                          gateway__drain_timeout_s=0.2) as (_runner, fake):
        await fake.inject("photo: what is this?", attachments=[_photo(tmp_path)])
        await until(lambda: len(_main(vmodel)) == 1, "the model call to hang", 20)
    # The gateway stopped mid-turn: the user's message is stored, its answer never came.
    async with runner_for(tmp_path, vmodel, providers__main__vision=True,
                          auxiliary__vision_model="vision-m") as (runner, fake):
        await fake.wait_for(lambda: "answer to photo:" in fake.messages("c1"), 30)
        rerun: Any = _main(vmodel)[-1].body["messages"][-1]["content"]
        assert isinstance(rerun, list) and "photo: what is this?" in rerun[0]["text"]
        [part] = [p for p in rerun if p["type"] == "image_url"]
        assert part["image_url"]["url"].startswith("data:image/jpeg;base64,")
        await _wait_stored(runner, DESCRIPTION)  # and described once it was answered
