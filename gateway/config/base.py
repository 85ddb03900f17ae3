"""Shared building blocks of the config models: the base class and coercing field types.

The field types (`IdList`, `OptSecret`, `SecretList`) live in `hermes_common.settings`, where the
adapters' settings models (which may not import this package) use them too.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from hermes_common.settings import IdList, OptSecret, SecretList, reveal

__all__ = ["ConfigModel", "IdList", "OptSecret", "SecretList", "reveal"]


class ConfigModel(BaseModel):
    """Frozen, and tolerant of unknown keys (the loader warns about them by path).

    Platform blocks are stricter: they are validated by each adapter's own settings model,
    where an unknown key is an error (`gateway.config.platforms`)."""

    model_config = ConfigDict(extra="ignore", frozen=True, validate_default=True)
