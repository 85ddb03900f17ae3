"""`platforms.fake`: the settings of the shipped in-memory adapter (tests and benchmarks).

Its keys switch the capabilities the fake platform declares.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from gateway.ports import PlatformSettings

__all__ = ["FakeSettings"]


def _known_dialect(name: str) -> str:
    from hermes_common.text import DIALECT_NAMES  # the text package only when a fake is built

    if name not in DIALECT_NAMES:
        raise ValueError(f"unknown dialect {name!r}; known: {', '.join(sorted(DIALECT_NAMES))}")
    return name


class FakeSettings(PlatformSettings):
    """Capability switches of the fake platform (`Capabilities` of the same names)."""

    edit: bool = True
    """Messages can be edited (streaming by edits)."""
    typing: bool = True
    """A typing indicator exists."""
    media: bool = True
    """Attachments can be sent."""
    delete: bool = True
    """Messages can be deleted."""
    reactions: bool = False
    """Reactions exist."""
    threads: bool = True
    """Threads exist."""
    max_length: int = Field(default=4096, ge=1)
    """Longest message; longer sends fail with `too_long`."""
    length_measure: Literal["chars", "utf16"] = "chars"
    """How `max_length` is measured."""
    dialect: Annotated[str, AfterValidator(_known_dialect)] = "markdown"
    """Markup dialect replies are converted to (a `hermes_common.text` dialect name)."""
    liveness_window_s: float = Field(default=0.0, ge=0)
    """Seconds without progress before the supervisor restarts it (`0` = never)."""
    trusted_auth: bool = False
    """It authenticates its users itself (allow-lists and pairing do not apply)."""
    push: bool = True
    """It can deliver a message nobody waits for (turns cut by a restart are re-run)."""
    progress_interval_s: float = Field(default=0.05, gt=0)
    """How often a connected fake reports progress."""
