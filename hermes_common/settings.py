"""Building blocks of pydantic settings models: a strict frozen base and coercing field types.

Shared by the gateway's configuration models and the adapters' settings models (which may
not import the gateway's config package). Pure pydantic; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, SecretStr

__all__ = [
    "IdList", "OptSecret", "SecretList", "SettingsModel", "reveal", "secret_values",
    "split_secrets",
]


class SettingsModel(BaseModel):
    """Frozen, and strict about keys: an unknown key is a validation error, not a silent drop."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    @classmethod
    def coerce(cls, value: Self | Mapping[str, Any] | None) -> Self:
        """`value` itself when it already is this model, else the mapping validated by it
        (None = every default).

        Raises:
            pydantic.ValidationError: a value is invalid or a key unknown.
        """
        if isinstance(value, cls):
            return value
        return cls.model_validate(dict(value or {}))


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
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if not isinstance(v, bool) and str(v).strip()]
    return value


def split_secrets(value: Any) -> Any:
    """The `SecretList` coercion: a comma/whitespace separated string becomes a list, numbers
    become strings, blank strings are dropped (other items are left to the field's type)."""
    value = _split(value)
    if isinstance(value, list | tuple):
        return [
            str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
            for v in value
            if not (isinstance(v, str) and not v.strip())
        ]
    return value


OptSecret = Annotated[SecretStr | None, BeforeValidator(_blank_to_none)]
"""A secret string; empty or blank means unset (so `${TOKEN:-}` is simply "not configured")."""

SecretList = Annotated[list[SecretStr], BeforeValidator(split_secrets)]
"""A list of secrets; a single comma-separated string is accepted; blank entries dropped."""

IdList = Annotated[list[str], BeforeValidator(_ids)]
"""Platform user ids as strings; numbers and comma-separated strings are accepted."""


def reveal(secret: SecretStr | None) -> str | None:
    """The plain value of an optional secret (None stays None)."""
    return secret.get_secret_value() if secret is not None else None


def secret_values(model: BaseModel) -> list[str]:
    """Every non-empty secret held by `model`, its nested models, lists and mappings."""
    return [s for s in _walk_secrets(model) if s]


def _walk_secrets(value: object) -> Iterator[str]:
    if isinstance(value, SecretStr):
        yield value.get_secret_value()
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _walk_secrets(getattr(value, name))
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _walk_secrets(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _walk_secrets(item)
