"""`platforms:`: one block per adapter, validated by that adapter's own settings model.

The model is found through the adapter registry (`hermes.adapters` entry points), so a plugin
adapter's block is validated by the plugin's model exactly like a built-in one. Looking a
model up never imports a platform SDK. An unknown platform name, or an unknown key inside a
block, is an error naming the full key path with a "did you mean" hint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, Field, RootModel, SerializeAsAny, ValidationError, model_validator

from gateway.config.errors import Problem, format_path
from gateway.config.keys import KeyPath, problems_from, unknown_keys
from gateway.ports import PlatformSettings
from gateway.registry import AdapterLoadError, AdapterNotFoundError, adapter_spec

__all__ = ["PlatformsConfig", "validate_platforms"]


def validate_platforms(
    raw: object, path: KeyPath = ("platforms",)
) -> tuple[dict[str, PlatformSettings], list[Problem]]:
    """Validate each block of the mapping `raw` (platform name → settings) with the settings
    model of the adapter of that name. Blocks that already are settings models are kept.

    Returns the valid blocks and a problem per unknown platform, unknown key or invalid
    value. Cross-key rules (`PlatformSettings.problems`) are not checked here. Must not raise.
    """
    if raw is None:
        return {}, []
    if not isinstance(raw, Mapping):
        return {}, [Problem(format_path(path), "expected a mapping of platform name → settings, "
                                               f"got {type(raw).__name__}")]
    blocks: dict[str, PlatformSettings] = {}
    problems: list[Problem] = []
    for key, block in raw.items():
        name, where = str(key), (*path, str(key))
        if isinstance(block, PlatformSettings):
            blocks[name] = block
            continue
        try:
            model = adapter_spec(name).settings
        except (AdapterNotFoundError, AdapterLoadError) as exc:
            problems.append(Problem(format_path(where), str(exc)))
            continue
        data: Any = {} if block is None else block
        if not isinstance(data, Mapping):
            problems.append(Problem(format_path(where), "expected a mapping of settings, got "
                                                        f"{type(data).__name__}"))
            continue
        unknown = unknown_keys(model, data, where)
        problems += [Problem(format_path(u.path), f"unknown key{u.hint()}") for u in unknown]
        try:
            blocks[name] = model.model_validate(data)
        except ValidationError as exc:
            reported = {format_path(u.path) for u in unknown}
            problems += problems_from(exc, data, where, reported=reported)
    return blocks, problems


class PlatformsConfig(RootModel[dict[str, SerializeAsAny[PlatformSettings]]]):
    """The validated `platforms:` blocks by name, in config order (each its adapter's model).

    Built by the loader; a raw mapping given directly is validated through the registry too
    (its problems then surface as one validation error)."""

    model_config = ConfigDict(frozen=True)

    root: dict[str, SerializeAsAny[PlatformSettings]] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _through_registry(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        blocks, problems = validate_platforms(data)
        if problems:
            raise ValueError("; ".join(str(p) for p in problems))
        return blocks

    def __getitem__(self, name: str) -> PlatformSettings:
        return self.root[name]

    def __contains__(self, name: object) -> bool:
        return name in self.root

    def get(self, name: str) -> PlatformSettings | None:
        return self.root.get(name)

    def items(self) -> list[tuple[str, PlatformSettings]]:
        return list(self.root.items())

    def enabled(self) -> list[str]:
        """Names of the enabled platforms, in config order."""
        return [name for name, block in self.root.items() if block.enabled]

    def enabled_blocks(self) -> dict[str, PlatformSettings]:
        """The enabled platforms' settings by name, in config order."""
        return {name: block for name, block in self.root.items() if block.enabled}

    def secret_values(self) -> list[str]:
        """Every secret configured in any block."""
        return [s for block in self.root.values() for s in block.secrets()]

    def problems(self, prefix: str = "platforms") -> list[Problem]:
        """Each block's cross-key rules (`PlatformSettings.problems`), with full key paths."""
        return [Problem(f"{prefix}.{name}.{p.key}", p.message)
                for name, block in self.root.items() for p in block.problems()]
