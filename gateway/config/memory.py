"""`memory:`: the built-in memory's scope and the one external memory provider.

The built-in memory (`MEMORY.md`, `USER.md`) is always on. `memory.provider` names at most one
external provider (an entry point of `hermes.memory_providers`); its settings are the block
`memory.providers.<name>`, validated by the provider's own settings model (found through the
entry point, like a platform block), so an unknown key there is an error naming its path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, SerializeAsAny, ValidationError, field_validator

from agent_core.memory import MemoryProviderError, ProviderSettings, provider_class
from gateway.config.base import ConfigModel
from gateway.config.errors import Problem, format_path
from gateway.config.keys import KeyPath, problems_from, unknown_keys

__all__ = ["MemoryConfig", "validate_memory_providers"]

PROVIDERS_PATH: KeyPath = ("memory", "providers")


def validate_memory_providers(
    raw: object, path: KeyPath = PROVIDERS_PATH
) -> tuple[dict[str, ProviderSettings], list[Problem]]:
    """Validate each block of `raw` (provider name → settings) with that provider's settings
    model. Returns the valid blocks and one problem per unknown provider, unknown key or bad
    value (never a value). Must not raise."""
    if raw is None:
        return {}, []
    if not isinstance(raw, Mapping):
        return {}, [Problem(format_path(path), "expected a mapping of provider name → settings, "
                                               f"got {type(raw).__name__}")]
    blocks: dict[str, ProviderSettings] = {}
    problems: list[Problem] = []
    for key, block in raw.items():
        name, where = str(key), (*path, str(key))
        if isinstance(block, ProviderSettings):
            blocks[name] = block
            continue
        try:
            model = provider_class(name).settings_model
        except MemoryProviderError as exc:
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


class MemoryConfig(ConfigModel):
    scope: Literal["profile", "user"] = "profile"
    """Whose `MEMORY.md` (the agent's own notes) a turn uses: one per profile, or one per
    user. `USER.md` is always per user and only shown to the agent in direct chats."""
    provider: str | list[str] | None = None
    """The one external memory provider beside the built-in memory (a name of the
    `hermes.memory_providers` entry points, e.g. `supermemory`); unset: none. Naming two is a
    configuration error."""
    providers: dict[str, SerializeAsAny[ProviderSettings]] = Field(default_factory=dict)
    """Each provider's settings by name (`memory.providers.supermemory: {...}`)."""
    recall_timeout_s: float = Field(default=3.0, gt=0, le=120)
    """Longest a turn waits for the provider's recall; then it goes on without it."""
    sync_timeout_s: float = Field(default=30.0, gt=0)
    """Longest one background sync (or session switch/end) may take."""
    hook_timeout_s: float = Field(default=10.0, gt=0)
    """Longest the pre-compression hook (and the provider's start and close) may take."""
    sync_queue_size: int = Field(default=64, ge=1, le=100_000)
    """Background jobs waiting for the provider; past this the newest is dropped (logged)."""
    recall_max_chars: int = Field(default=4000, ge=100, le=50_000)
    """Most characters of recalled memories added to one user message."""
    in_groups: bool = False
    """Recall and sync in group chats too (for the user who spoke). Off: the provider serves
    direct chats only, as the group's prompt carries nobody's personal memory."""

    @field_validator("providers", mode="before")
    @classmethod
    def _through_registry(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        blocks, problems = validate_memory_providers(data)
        if problems:
            raise ValueError("; ".join(str(p) for p in problems))
        return blocks

    def provider_names(self) -> list[str]:
        """The external providers named by `memory.provider` (at most one is valid)."""
        raw = self.provider
        if raw is None:
            return []
        items = raw if isinstance(raw, list) else raw.split(",")
        return list(dict.fromkeys(n.strip() for n in items if n and n.strip()))

    def provider_name(self) -> str | None:
        """The one external provider, or None."""
        names = self.provider_names()
        return names[0] if names else None

    def provider_settings(self) -> ProviderSettings | None:
        """The validated block of the named provider (None: none named or no block)."""
        name = self.provider_name()
        return self.providers.get(name) if name else None

    def secret_values(self) -> list[str]:
        return [s for block in self.providers.values() for s in block.secrets()]

    def problems(self) -> list[Problem]:
        names = self.provider_names()
        if len(names) > 1:
            return [Problem("memory.provider", f"at most one external memory provider at a "
                            f"time, got {len(names)} ({', '.join(names)}); the built-in memory "
                            "(MEMORY.md, USER.md) is always on and is not named here")]
        if not names:
            return []
        name = names[0]
        try:
            model = provider_class(name).settings_model
        except MemoryProviderError as exc:
            return [Problem("memory.provider", str(exc))]
        if name in self.providers:
            return []
        try:  # no block: the provider's defaults must do
            model.model_validate({})
        except ValidationError as exc:
            return problems_from(exc, {}, (*PROVIDERS_PATH, name))
        return []
