"""Which web tools a configuration offers, and with what (`gateway.web_tools`)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config.load import parse_config
from gateway.config.models import HermesConfig
from gateway.web_tools import WebTools, vision_target


def config(**data: Any) -> HermesConfig:
    base: dict[str, Any] = {"providers": {
        "main": {"base_url": "http://127.0.0.1:9/v1", "api_keys": ["k"], "model": "m",
                 "context_length": 8000},
        "aux": {"base_url": "http://127.0.0.1:9/v1", "api_keys": ["k"], "model": "a"}}}
    base.update(data)
    cfg, problems = parse_config(base, env={})[:2]
    assert not [p for p in problems if getattr(p, "level", "error") == "error"], problems
    return cfg  # type: ignore[no-any-return]


async def test_defaults_offer_web_extract_only_and_say_why() -> None:
    web = WebTools.from_config(config())
    try:
        assert [t.name for t in web.tools] == ["web_extract"]
        assert "base_url" in web.off["web_search"]
        assert "vision" in web.off["vision_analyze"]
        assert all(t.parallel_safe for t in web.tools)
    finally:
        await web.aclose()


async def test_search_and_vision_when_configured() -> None:
    cfg = config(tools={"web": {"search": {"backend": "brave", "api_key": "BSA-x"}}},
                 auxiliary={"provider": "aux", "vision_model": "vis-1"})
    web = WebTools.from_config(cfg)
    try:
        assert [t.name for t in web.tools] == ["web_search", "web_extract", "vision_analyze"]
        assert {t.name: t.toolset for t in web.tools} == {
            "web_search": "web", "web_extract": "web", "vision_analyze": "vision"}
        assert web.off == {}
        assert "BSA-x" in cfg.secret_values()
    finally:
        await web.aclose()


def test_the_vision_model_is_the_main_one_when_it_declares_vision() -> None:
    assert vision_target(config()) is None
    assert vision_target(config(auxiliary={"vision_model": "v"})) == ("main", "v")
    assert vision_target(config(auxiliary={"provider": "aux", "vision_model": "v"})) == ("aux", "v")
    cfg = config(providers={"main": {"base_url": "http://127.0.0.1:9/v1", "model": "m",
                                     "vision": True}},
                 auxiliary={"vision_model": "v"})
    assert vision_target(cfg) == ("main", "m")


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "bad host!", ""])
def test_a_wrong_allow_private_entry_is_a_config_error(entry: str) -> None:
    with pytest.raises(Exception, match="allow_private"):
        parse_config({"tools": {"web": {"allow_private": [entry]}}}, env={})
