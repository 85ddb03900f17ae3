"""Whether the main model sees images when `providers.<name>.vision` is unset: the built-in
table of known vision model names (issue 18), overridden by the key either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.models import ProviderConfig
from tests.fakes.openai_server import FakeOpenAIServer, text
from tests.gateway.runtime_harness import runner_for
from tests.media.files import png


@pytest.mark.parametrize(("model", "vision"), [
    ("gpt-4o", True), ("gpt-4o-mini", True), ("openai/gpt-4.1-mini", True),
    ("claude-3-5-sonnet-20241022", True), ("anthropic/claude-sonnet-4", True),
    ("gemini-2.0-flash", True), ("qwen2.5-vl-72b-instruct", True), ("llava:13b", True),
    ("o1", True), ("gpt-5-mini", True),
    ("gpt-3.5-turbo", False), ("gpt-4o-audio-preview", False), ("o3-mini", False),
    ("o1-mini", False), ("deepseek-chat", False), ("llama-3.1-70b", False),
    ("fake-model", False), ("mistral-large", False),
])
def test_the_table_knows_common_vision_models(model: str, vision: bool) -> None:
    assert ProviderConfig(model=model).has_vision() is vision
    assert ProviderConfig(model=model, vision=not vision).has_vision() is (not vision)


async def test_an_unset_key_uses_the_table_end_to_end(tmp_path: Path,
                                                      model: FakeOpenAIServer) -> None:
    image = tmp_path / "cache" / "fake" / "shot.png"
    image.parent.mkdir(parents=True)
    image.write_bytes(png())
    async with runner_for(tmp_path, model, providers__main__model="gpt-4o",
                          gateway__media__describe_for_history=False) as (_runner, fake):
        model.enqueue(text("A blue square."))
        await fake.inject("what is it?", attachments=[str(image)])
        await fake.wait_for(lambda: "A blue square." in fake.messages("c1"), 20)
    content = model.requests[0].body["messages"][-1]["content"]
    assert isinstance(content, list) and content[1]["type"] == "image_url"
    assert model.requests[0].body["model"] == "gpt-4o"
