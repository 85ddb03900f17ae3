"""Where each user's and each chat's files live: memory, workspace, cached attachments.

A principal is a user of one platform (`gateway.events.Principal`); every folder of one is
named by `folder_name`, which keeps a few plain characters of the id for the operator's eye
and adds a hash of the whole (platform, id), so no id, however hostile (`../..`, `/`, NUL,
very long), can name a path outside its parent or collide with another id.

Layout inside a profile (`$HERMES_HOME`):

    memories/MEMORY.md                      the agent's notes (memory.scope: profile)
    memories/users/<principal>/USER.md      what the agent knows about that user
    memories/users/<principal>/MEMORY.md    the agent's notes (memory.scope: user)
    workspace/users/<principal>/            the user's workspace (workspace.shared: false)
    workspace/                              the one shared workspace (workspace.shared: true)
    cache/chats/<chat>/                     inbound attachments of one chat
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

import structlog

from gateway.events import Attachment, MessageEvent, Principal
from storage.types import Session, SessionScope

__all__ = ["MemoryScope", "UserSpaces", "audience_of", "folder_name", "scope_of_event"]

log = structlog.get_logger("gateway.principals")

MemoryScope = Literal["profile", "user"]

_PLAIN = re.compile(r"[^A-Za-z0-9_-]")
_READABLE_CHARS = 24
TOOL_OUTPUT = ".tool-output"


@lru_cache(maxsize=4096)  # a turn asks for its principal's folders about a dozen times
def folder_name(platform: str, ident: str) -> str:
    """`<platform>.<readable>.<hash>`: one path component, safe for any id.

    `readable` keeps up to 24 letters, digits, `_` and `-` of `ident` (or `_`); the hash is
    16 hex digits of SHA-256 over the exact platform and id, so two ids never share a
    folder even when their readable parts agree."""
    plain_platform = _PLAIN.sub("", platform)[:_READABLE_CHARS] or "_"
    readable = _PLAIN.sub("", ident)[:_READABLE_CHARS] or "_"
    digest = hashlib.sha256(f"{platform}\x00{ident}".encode()).hexdigest()[:16]
    return f"{plain_platform}.{readable}.{digest}"


@lru_cache(maxsize=4096)
def _folder(base: Path, kind: str, platform: str, ident: str) -> Path:
    """`base/kind/folder_name(platform, ident)`, built once (paths are values)."""
    return base / kind / folder_name(platform, ident)


def scope_of_event(event: MessageEvent) -> SessionScope:
    """The sessions the sender of `event` may see from where they wrote: in a direct chat
    their own direct chats on this platform, in any other chat that chat's sessions."""
    return SessionScope.of(event.platform, event.chat_type.value, event.chat_id, event.user.id)


def audience_of(session: Session) -> Principal | None:
    """The one user a session talks to: its owner in a direct chat; None in a group (whose
    prompt carries nobody's personal memory)."""
    if session.chat_type == "dm" and session.user_id:
        return Principal(session.source, session.user_id)
    return None


@dataclass(frozen=True, slots=True)
class UserSpaces:
    """The per-principal and per-chat folders of one profile (paths only; nothing is
    created here except by `adopt_attachments`)."""

    memories: Path
    workspace_root: Path
    cache: Path
    memory_scope: MemoryScope = "profile"
    shared_workspace: bool = False

    def user_dir(self, principal: Principal) -> Path:
        """Where the principal's `USER.md` lives (and its `MEMORY.md` with scope `user`)."""
        return _folder(self.memories, "users", principal.platform, principal.user_id)

    def memory_dir(self, principal: Principal | None) -> Path | None:
        """The folder of the `MEMORY.md` a turn of `principal` uses: the profile's, or with
        `memory.scope: user` the principal's own (None when there is no principal)."""
        if self.memory_scope == "profile":
            return self.memories
        return self.user_dir(principal) if principal is not None else None

    def workspace(self, principal: Principal) -> Path:
        """The file tools' root for `principal`."""
        if self.shared_workspace:
            return self.workspace_root
        return _folder(self.workspace_root, "users", principal.platform, principal.user_id)

    def chat_cache(self, platform: str, chat_id: str) -> Path:
        """The folder of one chat's cached inbound attachments."""
        return _folder(self.cache, "chats", platform, chat_id)

    def tool_output_dirs(self) -> list[Path]:
        """Every folder of saved tool output (for housekeeping). Blocking."""
        if self.shared_workspace:
            return [self.workspace_root / TOOL_OUTPUT]
        users = self.workspace_root / "users"
        try:
            return [d / TOOL_OUTPUT for d in users.iterdir() if d.is_dir()]
        except OSError:
            return []

    def adopt_attachments(self, event: MessageEvent) -> MessageEvent:
        """Move the event's cached files into its chat's cache folder and return the event
        with the new paths. A file the adapter put outside the profile cache is left where
        it is (no `MEDIA:` reply can send it from there). Blocking: run it in a thread.
        Must not raise: a file that cannot be moved keeps its path (and is logged)."""
        if not event.attachments:
            return event
        dest = self.chat_cache(event.platform, event.chat_id)
        cache = self.cache.resolve()
        moved: list[Attachment] = []
        for att in event.attachments:
            src = Path(att.path)
            try:
                if not src.resolve().is_relative_to(cache) or src.parent == dest:
                    moved.append(att)
                    continue
                dest.mkdir(parents=True, exist_ok=True, mode=0o700)
                target = dest / src.name
                if target.exists():
                    target = dest / f"{uuid.uuid4().hex[:8]}-{src.name}"
                os.replace(src, target)
                moved.append(att.model_copy(update={"path": str(target)}))
            except OSError as exc:
                log.warning("attachment_not_adopted", platform=event.platform,
                            error=type(exc).__name__)
                moved.append(att)
        return event.model_copy(update={"attachments": tuple(moved)})
