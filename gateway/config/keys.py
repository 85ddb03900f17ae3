"""Key paths of a config tree: unknown keys (with a "did you mean") and validation errors.

Both name the full key path (`platforms.telegram.webhook.prot`) and never a value.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from gateway.config.errors import Problem, format_path
from gateway.config.redact import redact_text

__all__ = ["KeyPath", "UnknownKey", "problems_from", "unknown_keys"]

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class UnknownKey:
    """A key no model defines: where it is and the closest known key at that level."""

    path: KeyPath
    suggestion: str | None

    def hint(self) -> str:
        return f" (did you mean {self.suggestion!r}?)" if self.suggestion else ""


def _unwrap(ann: Any) -> list[Any]:
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(ann)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for a in typing.get_args(ann) for t in _unwrap(a)]
    return [ann]


def _walk(ann: Any, value: Any, path: KeyPath) -> list[UnknownKey]:
    out: list[UnknownKey] = []
    for t in _unwrap(ann):
        origin = typing.get_origin(t)
        if isinstance(t, type) and issubclass(t, BaseModel) and isinstance(value, Mapping):
            return unknown_keys(t, value, path)
        if origin is dict and isinstance(value, Mapping):
            vt = typing.get_args(t)[1] if typing.get_args(t) else Any
            for k, v in value.items():
                out += _walk(vt, v, (*path, str(k)))
            return out
        if origin is list and isinstance(value, list):
            it = typing.get_args(t)[0] if typing.get_args(t) else Any
            for i, v in enumerate(value):
                out += _walk(it, v, (*path, i))
            return out
    return out


def unknown_keys(
    model: type[BaseModel], data: Mapping[str, Any], path: KeyPath = ()
) -> list[UnknownKey]:
    """Every key of `data` (at any depth) that `model` does not define, with its full path."""
    fields = model.model_fields
    by_name = dict(fields)
    by_name.update({f.alias: f for f in fields.values() if f.alias})
    out: list[UnknownKey] = []
    for key, value in data.items():
        f = by_name.get(str(key))
        here = (*path, str(key))
        if f is None:
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            out.append(UnknownKey(here, close[0] if close else None))
            continue
        out += _walk(f.annotation, value, here)
    return out


def _real_path(data: Any, loc: tuple[Any, ...]) -> list[str | int]:
    """The part of a pydantic `loc` that names real keys (drops union/validator tags)."""
    real: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, Mapping) and str(part) in {str(k) for k in node}:
            key = next(k for k in node if str(k) == str(part))
            real.append(str(part))
            node = node[key]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            real.append(part)
            node = node[part]
        elif isinstance(part, str) and node is None and not real:
            real.append(part)
        else:
            break
    return real


def problems_from(
    exc: ValidationError, data: Any, prefix: KeyPath = (), *, reported: Collection[str] = ()
) -> list[Problem]:
    """One `Problem` per distinct error of `exc` (raised validating `data`), its path under
    `prefix`. "Extra inputs" errors at a path in `reported` are left out (already reported
    by `unknown_keys`, with a hint)."""
    out: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    for err in exc.errors(include_url=False, include_input=False, include_context=False):
        path = format_path([*prefix, *_real_path(data, tuple(err["loc"]))])
        if err["type"] == "extra_forbidden" and path in reported:
            continue
        msg = str(err["msg"]).removeprefix("Value error, ")
        if (path, msg) not in seen:
            seen.add((path, msg))
            out.append(Problem(path, redact_text(msg)))
    return out
