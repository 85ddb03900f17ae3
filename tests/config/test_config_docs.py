"""docs/configuration.md and the models cannot drift: every key of every model (the adapters'
and the memory providers' settings models included, found through their entry points) has a row in the key tables, every row
names a key some model has, each row's default is the model's, and the example is valid."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic.fields import FieldInfo

from agent_core.memory import available_providers, provider_class
from gateway.config.load import parse_config
from gateway.config.models import HermesConfig
from gateway.ports import PlatformSettings
from gateway.registry import adapter_spec, available_adapters
from tests.config.model_keys import leaves

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
COMMON = set(PlatformSettings.model_fields)
PLATFORMS = ("platforms", "<platform>")
_ROW = re.compile(r"^\| `([^`]+)` \| ([^|]*) \|", re.M)


def model_keys() -> dict[str, FieldInfo]:
    """Every key path of the contract → its field (common platform keys once, generically)."""
    keys = {".".join(k): f for k, f in leaves(HermesConfig).items() if k[0] != "platforms"}
    keys.update({".".join(k): f for k, f in leaves(PlatformSettings, PLATFORMS).items()})
    for name in available_adapters():
        for key, field in leaves(adapter_spec(name).settings, ("platforms", name)).items():
            if key[2] not in COMMON:
                keys[".".join(key)] = field
    for name in available_providers():  # memory providers' blocks, like platforms'
        model = provider_class(name).settings_model
        keys.update({".".join(k): f for k, f in
                     leaves(model, ("memory", "providers", name)).items()})
    return keys


def doc_rows() -> dict[str, str]:
    """Key path → its "Default" cell, for every row of the tables of the "Keys" section."""
    text = DOC.read_text("utf-8")
    section = text[text.index("\n## Keys\n"):text.index("\n## A complete example")]
    return {m.group(1): m.group(2).strip() for m in _ROW.finditer(section)}


def _default_matches(cell: str, field: FieldInfo) -> bool:
    value = field.get_default(call_default_factory=True)
    if value is None:
        return cell.startswith("—")
    shown = re.match(r"`([^`]*)`", cell)
    if shown is None:
        return False
    text = shown.group(1)
    if isinstance(value, bool):
        return text == str(value).lower()
    if isinstance(value, int | float):
        try:
            return float(text) == float(value)
        except ValueError:
            return False
    if isinstance(value, list):
        return text == "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, dict):
        return text == "{}" and not value
    return text == str(value)


def test_every_model_key_is_documented() -> None:
    rows = doc_rows()
    assert sorted(set(model_keys()) - set(rows)) == []


def test_every_documented_key_exists_in_a_model() -> None:
    assert sorted(set(doc_rows()) - set(model_keys())) == []


def test_documented_defaults_are_the_models() -> None:
    rows, keys = doc_rows(), model_keys()
    wrong = {k: rows[k] for k in keys.keys() & rows.keys()
             if not _default_matches(rows[k], keys[k])}
    assert wrong == {}


def test_adapter_defaults_of_the_shared_keys_are_documented() -> None:
    """An adapter that changes the default of a key every platform has says so in that row:
    `true` (`false` for `api`)."""
    rows = doc_rows()
    missing = []
    for name in available_adapters():
        model = adapter_spec(name).settings
        for key in COMMON:
            value = model.model_fields[key].get_default(call_default_factory=True)
            if value != PlatformSettings.model_fields[key].get_default(call_default_factory=True):
                shown = str(value).lower() if isinstance(value, bool) else str(value)
                if f"`{shown}` for `{name}`" not in rows[f"platforms.<platform>.{key}"]:
                    missing.append(f"{name}.{key}")
    assert missing == []


def test_documented_example_is_valid() -> None:
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"## A complete example\s+```yaml\n(.*?)```", text, re.S)
    assert block is not None
    env = {"OPENAI_API_KEY": "sk-x", "TELEGRAM_BOT_TOKEN": "1:x", "HERMES_API_KEY": "k" * 20}
    cfg, warnings, _ = parse_config(yaml.safe_load(block.group(1)), env=env)
    assert warnings == []
    assert cfg.model.fallback == ["local"] and cfg.platforms.enabled() == ["telegram", "api"]
