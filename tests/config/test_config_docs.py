"""docs/configuration.md documents every key of the models, and its example is valid."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import yaml
from pydantic import BaseModel

from gateway.config.load import parse_config
from gateway.config.models import HermesConfig

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
COMMON = {"enabled", "allowed_users", "allow_all", "require_mention", "tool_progress"}


def _leaves(model: type[BaseModel], prefix: str) -> list[str]:
    out: list[str] = []
    for name, field in model.model_fields.items():
        path = f"{prefix}.{name}" if prefix else name
        ann = field.annotation
        args = typing.get_args(ann)
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out += _leaves(ann, path)
        elif typing.get_origin(ann) is dict and args and isinstance(args[1], type) and issubclass(
            args[1], BaseModel
        ):
            out += _leaves(args[1], f"{path}.<name>")
        else:
            out.append(path)
    return out


def test_every_key_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = []
    for path in _leaves(HermesConfig, ""):
        parts = path.split(".")
        if parts[0] == "platforms" and parts[-1] in COMMON and len(parts) == 3:
            path = f"platforms.<platform>.{parts[-1]}"
        if f"`{path}`" not in text:
            missing.append(path)
    assert missing == []


def test_documented_example_is_valid() -> None:
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"## A complete example\s+```yaml\n(.*?)```", text, re.S)
    assert block is not None
    env = {"OPENAI_API_KEY": "sk-x", "TELEGRAM_BOT_TOKEN": "1:x", "HERMES_API_KEY": "k" * 20}
    cfg, warnings, _ = parse_config(yaml.safe_load(block.group(1)), env=env)
    assert warnings == []
    assert cfg.model.fallback == ["local"] and cfg.platforms.enabled() == ["telegram", "api"]
