"""Buttons on Slack: Block Kit `actions` under a message, and `block_actions` presses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.events import Button, InteractionEvent, UserRef

__all__ = ["MAX_SECTION_TEXT", "button_blocks", "interaction_of"]

#: Slack's limit on a section block's text; the message's `text` stays the whole notice.
MAX_SECTION_TEXT = 3000


def button_blocks(text: str, buttons: tuple[Button, ...], *, mrkdwn: bool) -> list[dict[str, Any]]:
    """The text as a section, then one actions block. Each button's `action_id` is its
    action (unique in the block) and its `value` the button's value."""
    shown = text if len(text) <= MAX_SECTION_TEXT else text[: MAX_SECTION_TEXT - 1] + "…"
    elements = [{"type": "button", "action_id": b.action[:255], "value": b.value[:2000],
                 "text": {"type": "plain_text", "text": b.label[:75]}} for b in buttons[:25]]
    return [{"type": "section",
             "text": {"type": "mrkdwn" if mrkdwn else "plain_text", "text": shown}},
            {"type": "actions", "elements": elements}]


def _str(node: Any, *keys: str) -> str | None:
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node if isinstance(node, str) and node else None


def interaction_of(platform: str, body: Mapping[str, Any]) -> InteractionEvent | None:
    """The press a `block_actions` payload carries, or None (other payloads, a press
    outside a channel message, or missing ids). Its event id is the press's `trigger_id`
    (one per press; a redelivery carries the same)."""
    actions = body.get("actions")
    if body.get("type") != "block_actions" or not isinstance(actions, list) or not actions:
        return None
    action = actions[0] if isinstance(actions[0], Mapping) else {}
    channel = _str(body, "channel", "id") or _str(body, "container", "channel_id")
    user = _str(body, "user", "id")
    press_id = _str(body, "trigger_id") or _str(action, "action_ts")
    action_id = _str(action, "action_id")
    if channel is None or user is None or press_id is None or action_id is None:
        return None
    name = _str(body, "user", "username") or _str(body, "user", "name")
    return InteractionEvent(
        platform=platform, event_id=press_id, chat_id=channel,
        thread_id=_str(body, "message", "thread_ts") or _str(body, "container", "thread_ts"),
        user=UserRef(id=user, name=name), action=action_id,
        value=_str(action, "value") or "",
        message_id=_str(body, "container", "message_ts") or _str(body, "message", "ts"),
        raw=body)
