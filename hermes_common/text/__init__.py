"""Platform-neutral text helpers for outbound delivery, shared by every adapter.

Pure functions, no I/O except `MediaPolicy.check` (filesystem lookups; `acheck` runs it off the
event loop):

- measuring: `text_length`, `utf16_length`, `sanitize`
- splitting: `split_message`, `split_chunks`, `truncate_preview`
- formatting: `to_telegram_html`, `to_telegram_markdown_v2`, `to_slack_mrkdwn`, `to_discord`,
  `to_plain`, `render_parts` (format + split so every part is valid on its own) and
  `render_preview` (the head of a streaming reply, converted and cut to fit)
- attachments: `extract_media`, `MediaRef`, `MediaPolicy`, `MediaDecision`
"""

from hermes_common.text.markdown import (
    escape_markdown_v2,
    to_discord,
    to_plain,
    to_slack_mrkdwn,
    to_telegram_html,
    to_telegram_markdown_v2,
)
from hermes_common.text.measure import Measure, sanitize, text_length, utf16_length
from hermes_common.text.media import MediaDecision, MediaPolicy, MediaRef, extract_media
from hermes_common.text.render import FORMATTERS, MIN_RENDER_LIMIT, render_parts, render_preview
from hermes_common.text.split import (
    MIN_LIMIT,
    code_fence_ranges,
    split_chunks,
    split_message,
    truncate_preview,
)

__all__ = [
    "FORMATTERS",
    "MIN_LIMIT",
    "MIN_RENDER_LIMIT",
    "Measure",
    "MediaDecision",
    "MediaPolicy",
    "MediaRef",
    "code_fence_ranges",
    "escape_markdown_v2",
    "extract_media",
    "render_parts",
    "render_preview",
    "sanitize",
    "split_chunks",
    "split_message",
    "text_length",
    "to_discord",
    "to_plain",
    "to_slack_mrkdwn",
    "to_telegram_html",
    "to_telegram_markdown_v2",
    "truncate_preview",
    "utf16_length",
]
