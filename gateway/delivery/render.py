"""Reply text → what an adapter sends: dialect conversion and splitting per capabilities.

The dialect is the adapter's declared name, passed through to `hermes_common.text`."""

from __future__ import annotations

import asyncio
import functools

from gateway.delivery.stream import Rendered
from gateway.ports import Capabilities
from hermes_common.text import PLAIN, Measure, render_reply, truncate_preview

__all__ = ["preview_text", "render_final", "render_plain"]

_OFFLOAD_CHARS = 8_000
_HEAD_MARGIN = 64


def _limit(caps: Capabilities) -> int:
    return max(caps.max_length, 256)


def _render(md: str, caps: Capabilities, dialect: str) -> Rendered:
    parts, formatted = render_reply(md, dialect=dialect, limit=_limit(caps),
                                    measure=caps.length_measure)
    return Rendered(parts=parts, formatted=formatted)


async def render_final(md: str, caps: Capabilities) -> Rendered:
    """Convert and split; long replies are rendered off the event loop."""
    if len(md) > _OFFLOAD_CHARS:
        return await asyncio.to_thread(_render, md, caps, caps.dialect)
    return _render(md, caps, caps.dialect)


def render_plain(md: str, caps: Capabilities) -> Rendered:
    """The plain-text fallback for a platform that rejected the formatted text."""
    r = _render(md, caps, PLAIN)
    return Rendered(parts=r.parts, formatted=False)


def preview_text(text: str, caps: Capabilities) -> str:
    """A streaming preview (plain text) cut to the platform's limit. The cost is bounded by
    the limit, not by the reply's length: only the head that can be shown is looked at (the
    cut never looks past it), and a head already cut once is answered from a small cache,
    so an over-long reply that keeps growing costs a slice and a lookup per edit."""
    limit = _limit(caps)
    if len(text) > limit + _HEAD_MARGIN:  # more code points than fit in any measure
        return _truncated(text[: limit + _HEAD_MARGIN], limit, caps.length_measure)
    return truncate_preview(text, limit, caps.length_measure)


@functools.lru_cache(maxsize=64)
def _truncated(head: str, limit: int, measure: Measure) -> str:
    return truncate_preview(head, limit, measure)
