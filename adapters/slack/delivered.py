"""Which parts of a final reply are already in a Slack chat (start-up recovery).

Every part of a final is posted with message metadata naming its delivery key
("<outbox id>.<part>"). After a crash between the post and the outbox's "delivered" mark,
recovery reads the chat's history (or the thread's replies) from a while before the row was
recorded and finds the parts by that key instead of posting them a second time.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from gateway.ports import DeliveryRef

__all__ = ["EVENT_TYPE", "find_delivered", "reply_metadata"]

EVENT_TYPE = "hermes_reply"
#: Slack stamps ts on its own clock: look this far before the row's time
_SKEW_S = 600.0
_PAGE = 200


def reply_metadata(delivery_key: str) -> dict[str, Any]:
    """The `metadata` argument of chat.postMessage for one part of a final."""
    return {"event_type": EVENT_TYPE, "event_payload": {"delivery_key": delivery_key}}


async def find_delivered(web: AsyncWebClient, ref: DeliveryRef,
                         thread_ts: str | None) -> dict[int, str]:
    """Part index -> ts of the bot's messages carrying `ref`'s delivery keys (the newest page
    after the window start). Raises the SDK's errors (the caller cannot tell then)."""
    args: dict[str, Any] = {"channel": ref.chat_id, "oldest": f"{ref.since - _SKEW_S:.6f}",
                            "include_all_metadata": True, "limit": _PAGE}
    if thread_ts:
        resp = await web.conversations_replies(ts=thread_ts, **args)
    else:
        resp = await web.conversations_history(**args)
    prefix = f"{ref.outbox_id}."
    found: dict[int, str] = {}
    for message in resp.get("messages") or []:
        meta = message.get("metadata") or {}
        if meta.get("event_type") != EVENT_TYPE:
            continue
        key = str((meta.get("event_payload") or {}).get("delivery_key") or "")
        part = key.removeprefix(prefix)
        if key.startswith(prefix) and part.isdigit() and message.get("ts"):
            found.setdefault(int(part), str(message["ts"]))
    return found
