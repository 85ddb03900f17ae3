"""Which models accept image parts when `providers.<name>.vision` is not set: a small table of
name patterns of known vision models (checked on the name after the last `/`, so routed names
such as `openai/gpt-4o` match too). An unknown name has no vision; set the key to say
otherwise. Patterns are matched case-insensitively from the start of the name."""

from __future__ import annotations

import re

__all__ = ["KNOWN_VISION_MODELS", "NOT_VISION_MODELS", "known_vision"]

#: Families that read images (any size or date suffix).
KNOWN_VISION_MODELS: tuple[str, ...] = (
    r"gpt-4o", r"gpt-4\.1", r"gpt-4\.5", r"gpt-4-turbo", r"gpt-4-vision", r"gpt-5",
    r"chatgpt-4o", r"o1(?!-mini)", r"o3(?!-mini)", r"o4-mini",
    r"claude-3", r"claude-(opus|sonnet|haiku)-4", r"claude-(opus|sonnet|haiku)-[5-9]",
    r"gemini-(1\.5|2|3)", r"gemma-3",
    r"llava", r"bakllava", r"qwen[0-9.]*-vl", r"qvq", r"pixtral", r"llama-3\.2-\d+b-vision",
    r"llama-4", r"mistral-(small|medium)-3\.[1-9]", r"grok-(2-vision|4)", r"minicpm-v",
    r"internvl", r"moondream", r"glm-4(\.\d)?v",
)
#: Names that start like a vision family but are text-only.
NOT_VISION_MODELS: tuple[str, ...] = (r"gpt-4o(-mini)?-(audio|realtime|transcribe|search)",)

_YES = re.compile("|".join(f"(?:{p})" for p in KNOWN_VISION_MODELS), re.IGNORECASE)
_NO = re.compile("|".join(f"(?:{p})" for p in NOT_VISION_MODELS), re.IGNORECASE)


def known_vision(model: str) -> bool:
    """True when `model` is in the table of known vision models."""
    name = model.strip().rsplit("/", 1)[-1]
    return bool(_YES.match(name)) and not _NO.match(name)
