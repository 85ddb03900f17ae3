"""Slack wire payloads for the fake: Events API bodies, Socket Mode envelopes, signatures."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import time
import uuid
from typing import Any

__all__ = [
    "block_actions",
    "envelope",
    "event_callback",
    "message_event",
    "sign",
    "signed_headers",
]

_ids = itertools.count(1)


def sign(secret: str, timestamp: str, body: str) -> str:
    """`v0=` + HMAC-SHA256 over `v0:{timestamp}:{body}`, as Slack signs requests."""
    mac = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256)
    return "v0=" + mac.hexdigest()


def signed_headers(secret: str, body: str, *, timestamp: int | None = None,
                   retry_num: int | None = None, retry_reason: str | None = None
                   ) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": sign(secret, ts, body),
    }
    if retry_num is not None:
        headers["X-Slack-Retry-Num"] = str(retry_num)
        headers["X-Slack-Retry-Reason"] = retry_reason or "http_timeout"
    return headers


def message_event(
    *,
    channel: str,
    ts: str,
    text: str,
    user: str | None,
    channel_type: str | None,
    event_type: str = "message",
    thread_ts: str | None = None,
    parent_user_id: str | None = None,
    subtype: str | None = None,
    bot_id: str | None = None,
    files: list[dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    ev: dict[str, Any] = {"type": event_type, "channel": channel, "text": text, "ts": ts,
                          "event_ts": ts}
    if user is not None:
        ev["user"] = user
    if channel_type is not None and event_type == "message":
        ev["channel_type"] = channel_type
    if thread_ts is not None:
        ev["thread_ts"] = thread_ts
        if parent_user_id is not None:
            ev["parent_user_id"] = parent_user_id
    if subtype is not None:
        ev["subtype"] = subtype
    if bot_id is not None:
        ev["bot_id"] = bot_id
    if files:
        ev["files"] = files
        ev.setdefault("subtype", "file_share")
    if extra:
        ev.update(extra)
    return ev


def event_callback(event: dict[str, Any], *, team_id: str, api_app_id: str,
                   bot_user_id: str) -> dict[str, Any]:
    return {
        "token": "verification-token-unused",
        "team_id": team_id,
        "api_app_id": api_app_id,
        "event": event,
        "type": "event_callback",
        "event_id": f"Ev{next(_ids):08d}{uuid.uuid4().hex[:6].upper()}",
        "event_time": int(time.time()),
        "authorizations": [{"enterprise_id": None, "team_id": team_id,
                            "user_id": bot_user_id, "is_bot": True,
                            "is_enterprise_install": False}],
        "is_ext_shared_channel": False,
        "event_context": uuid.uuid4().hex,
    }


def envelope(payload: dict[str, Any], *, retry_attempt: int = 0,
             retry_reason: str = "", kind: str = "events_api") -> dict[str, Any]:
    return {
        "envelope_id": str(uuid.uuid4()),
        "payload": payload,
        "type": kind,
        "accepts_response_payload": False,
        "retry_attempt": retry_attempt,
        "retry_reason": retry_reason,
    }


def block_actions(*, channel: str, message: dict[str, Any], action: dict[str, Any], user: str,
                  team_id: str, api_app_id: str) -> dict[str, Any]:
    """A `block_actions` interactive payload: `user` pressed `action` under `message`."""
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": team_id},
        "api_app_id": api_app_id,
        "token": "verification-token-unused",
        "container": {"type": "message", "message_ts": message["ts"], "channel_id": channel,
                      "is_ephemeral": False},
        "trigger_id": f"{next(_ids)}.{int(time.time())}.{uuid.uuid4().hex[:16]}",
        "team": {"id": team_id, "domain": "fake"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": channel.lower()},
        "message": message,
        "state": {"values": {}},
        "response_url": "https://hooks.slack.invalid/actions/unused",
        "actions": [{**action, "block_id": "hermes_actions", "type": "button",
                     "action_ts": f"{time.time():.6f}"}],
    }
