"""Shared building blocks of the config models: the base class and coercing field types."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, SecretStr

__all__ = ["ConfigModel", "IdList", "OptSecret", "SecretList", "reveal"]


class ConfigModel(BaseModel):
    """Frozen, and tolerant of unknown keys (the loader warns about them by path)."""

    model_config = ConfigDict(extra="ignore", frozen=True, validate_default=True)


def _blank_to_none(value: Any) -> Any:
    if isinstance(value, str) and not value.strip():
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def _split(value: Any) -> Any:
    """A comma/whitespace separated string (typical of an env var) becomes a list."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v for v in re.split(r"[,\s]+", value) if v]
    if isinstance(value, int | float):
        return [value]
    return value


def _ids(value: Any) -> Any:
    value = _split(value)
    if isinstance(value, list):
        return [str(v).strip() for v in value if not isinstance(v, bool) and str(v).strip()]
    return value


def _secrets(value: Any) -> Any:
    value = _split(value)
    if isinstance(value, list):
        return [
            str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
            for v in value
            if not (isinstance(v, str) and not v.strip())
        ]
    return value


OptSecret = Annotated[SecretStr | None, BeforeValidator(_blank_to_none)]
"""A secret string; empty or blank means unset (so `${TOKEN:-}` is simply "not configured")."""

SecretList = Annotated[list[SecretStr], BeforeValidator(_secrets)]
"""A list of secrets; a single comma-separated string is accepted; blank entries dropped."""

IdList = Annotated[list[str], BeforeValidator(_ids)]
"""Platform user ids as strings; numbers and comma-separated strings are accepted."""


def reveal(secret: SecretStr | None) -> str | None:
    """The plain value of an optional secret (None stays None)."""
    return secret.get_secret_value() if secret is not None else None
