"""Platform-neutral text helpers for outbound delivery, shared by every adapter.

Pure functions, no I/O except `MediaPolicy.check` (filesystem lookups; `acheck` runs it off the
event loop):

- measuring: `text_length`, `utf16_length`, `sanitize`
- splitting: `split_message`, `split_chunks`, `truncate_preview`
- formatting: `to_telegram_html`, `to_telegram_markdown_v2`, `to_slack_mrkdwn`, `to_discord`,
  `to_plain`, `render_parts` (format + split so every part is valid on its own),
  `render_reply` (the parts of a reply in any dialect an adapter declares) and
  `render_preview` (the head of a streaming reply, converted and cut to fit)
- dialects: `DIALECT_NAMES` is the registry of names an adapter may declare as its
  `Capabilities.dialect` (`MARKDOWN`, `PLAIN` and the platform dialects); the gateway passes
  the name through without interpreting it
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
from hermes_common.text.render import (
    DIALECT_NAMES,
    FORMATTERS,
    MARKDOWN,
    MIN_RENDER_LIMIT,
    PLAIN,
    render_parts,
    render_preview,
    render_reply,
)
from hermes_common.text.split import (
    MIN_LIMIT,
    code_fence_ranges,
    split_chunks,
    split_message,
    truncate_preview,
)

__all__ = [
    "DIALECT_NAMES",
    "FORMATTERS",
    "MARKDOWN",
    "MIN_LIMIT",
    "MIN_RENDER_LIMIT",
    "Measure",
    "MediaDecision",
    "MediaPolicy",
    "MediaRef",
    "PLAIN",
    "code_fence_ranges",
    "escape_markdown_v2",
    "extract_media",
    "render_parts",
    "render_preview",
    "render_reply",
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
