"""Walking the config models for tests: every leaf key path of a model, with its field."""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

__all__ = ["leaves"]


def _model(ann: Any) -> type[BaseModel] | None:
    return ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None


def leaves(
    model: type[BaseModel], prefix: tuple[str, ...] = ()
) -> dict[tuple[str, ...], FieldInfo]:
    """Key path → field for every leaf of `model`; nested models are walked, and a mapping of
    models (`providers: {name: …}`) appears as `<name>`."""
    out: dict[tuple[str, ...], FieldInfo] = {}
    for name, field in model.model_fields.items():
        path = (*prefix, name)
        ann = field.annotation
        args = typing.get_args(ann)
        if (sub := _model(ann)) is not None:
            out.update(leaves(sub, path))
        elif typing.get_origin(ann) is dict and args and (sub := _model(args[1])) is not None:
            out.update(leaves(sub, (*path, "<name>")))
        else:
            out[path] = field
    return out
