"""Session key derivation (DESIGN.md §2 step 3)."""

from __future__ import annotations

from gateway.events import ChatType, MessageEvent

__all__ = ["session_key"]


def session_key(event: MessageEvent, *, group_sessions_per_user: bool = True) -> str:
    """`platform:chat_type:chat_id[:thread][:user]`.

    DMs are one session per chat. In groups and channels every member gets their own session
    when `group_sessions_per_user` is on, unless the message is in a thread: a thread is a
    shared conversation. Colons inside ids are escaped so keys never collide.
    """
    parts = [event.platform, event.chat_type.value, _esc(event.chat_id)]
    if event.thread_id:
        parts.append("t=" + _esc(event.thread_id))
    if (
        event.chat_type is not ChatType.DM
        and group_sessions_per_user
        and not event.thread_id
        and event.chat_type is not ChatType.THREAD
    ):
        parts.append("u=" + _esc(event.user.id))
    return ":".join(parts)


def _esc(value: str) -> str:
    return value.replace("%", "%25").replace(":", "%3A")
