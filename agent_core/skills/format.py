"""The SKILL.md format: YAML frontmatter between `---` lines, then a Markdown body.

Compatible with the common SKILL.md layout: `name` and `description` are required; `tags`,
`platforms` (operating systems: `linux`, `macos`, `windows`; absent = all) and the tools a skill
needs (`required_tools`, also read as `requires_tools` or `metadata.hermes.requires_tools`)
are optional; other keys (`version`, `license`, `metadata`, …) pass through untouched.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_NAME_CHARS",
    "MAX_SKILL_CHARS",
    "FormatError",
    "SkillMeta",
    "current_os",
    "parse_skill",
    "split_frontmatter",
    "valid_name",
]

MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
#: Longest SKILL.md accepted (characters).
MAX_SKILL_CHARS = 100_000

_NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]*")
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FormatError(ValueError):
    """A SKILL.md that does not follow the format (the message says what is wrong)."""


@dataclass(frozen=True, slots=True)
class SkillMeta:
    """What the frontmatter says about a skill."""

    name: str
    description: str
    tags: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()
    required_tools: tuple[str, ...] = ()


def valid_name(name: str) -> bool:
    """A skill or category name: lower-case letters, digits, '.', '_', '-'; at most 64."""
    return len(name) <= MAX_NAME_CHARS and _NAME_RE.fullmatch(name) is not None and ".." not in name


def current_os() -> str:
    """This machine in the `platforms` vocabulary."""
    if sys.platform.startswith("darwin"):
        return "macos"
    if sys.platform.startswith("win"):
        return "windows"
    return "linux"


def split_frontmatter(text: str) -> tuple[str, str]:
    """(frontmatter YAML, body). Raises FormatError when the block is missing or unclosed."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith("---"):
        raise FormatError("SKILL.md must start with a '---' line opening the frontmatter")
    first = text.find("\n")
    if first < 0 or text[:first].strip() != "---":
        raise FormatError("SKILL.md must start with a '---' line opening the frontmatter")
    end = re.search(r"^---[ \t]*$", text[first + 1 :], re.M)
    if end is None:
        raise FormatError("the frontmatter is not closed by a '---' line")
    head = text[first + 1 : first + 1 + end.start()]
    body = text[first + 1 + end.end() :].lstrip("\r\n")
    return head, body


def _strings(value: Any, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",")]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FormatError(f"'{key}' must be a list of strings")
    return tuple(v for v in value if v)


def _hermes(data: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = data.get("metadata")
    inner = meta.get("hermes") if isinstance(meta, Mapping) else None
    return inner if isinstance(inner, Mapping) else {}


def parse_skill(text: str, *, require_body: bool = True) -> tuple[SkillMeta, str]:
    """Validate a SKILL.md and return its metadata and body. Raises FormatError."""
    if len(text) > MAX_SKILL_CHARS:
        raise FormatError(f"SKILL.md is longer than {MAX_SKILL_CHARS:,} characters")
    head, body = split_frontmatter(text)
    try:
        data = yaml.load(head, Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise FormatError(f"the frontmatter is not valid YAML ({type(exc).__name__})") from None
    if not isinstance(data, Mapping):
        raise FormatError("the frontmatter must be a YAML mapping")
    name, desc = data.get("name"), data.get("description")
    if not isinstance(name, str) or not valid_name(name.strip()):
        raise FormatError("frontmatter 'name' must be a lower-case name of letters, digits, "
                          "'.', '_' or '-' (at most 64 characters)")
    if not isinstance(desc, str) or not desc.strip():
        raise FormatError("frontmatter 'description' is required (one line saying when to use "
                          "the skill)")
    if len(desc) > MAX_DESCRIPTION_CHARS:
        raise FormatError(f"'description' is longer than {MAX_DESCRIPTION_CHARS} characters")
    if require_body and not body.strip():
        raise FormatError("SKILL.md needs a body after the frontmatter")
    hermes = _hermes(data)
    tools = (data.get("required_tools") or data.get("requires_tools")
             or hermes.get("requires_tools"))
    meta = SkillMeta(
        name=name.strip(),
        description=" ".join(desc.split()),
        tags=_strings(data.get("tags") or hermes.get("tags"), "tags"),
        platforms=tuple(p.lower() for p in _strings(data.get("platforms"), "platforms")),
        required_tools=_strings(tools, "required_tools"),
    )
    return meta, body
