"""Files a reply may send (`MEDIA:` lines), checked when the reply is recorded and again when
each file is read for sending.

A reply may send a file from the current chat's attachment cache, the current user's
workspace, or a folder the operator listed (`gateway.media.allowed_dirs`); never a
credential-like file, the profile's `.env` / `state.db`, or a system location
(`hermes_common.text.MediaPolicy`). The first check stores the folder the file was allowed
from (`OutboundAttachment.root`). The second opens the file without following a symlink in
its last component, takes the real path of what it opened, and checks that path again
(against that folder only) before reading at most `max_bytes`: a file swapped for a link, or
moved out, between the two checks is not sent.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

from gateway.events import OutboundAttachment
from hermes_common.text import MediaPolicy, MediaRef

__all__ = ["OutboundFiles", "RootsFor", "human_size"]

#: (platform, chat id, user id or None) → the folders a reply in that chat, to that user,
#: may send files from (besides the operator's folders).
RootsFor = Callable[[str, str, str | None], Sequence[Path]]

_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
               | getattr(os, "O_NONBLOCK", 0))


def human_size(n: int) -> str:
    """1536 → "1.5 KB", 3 * 2**20 → "3.0 MB" (binary units)."""
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


class OutboundFiles:
    """Decides which files a reply may attach and reads them for sending.

    Both methods touch the filesystem (blocking: run them in a thread) and never raise."""

    def __init__(
        self,
        roots_for: RootsFor,
        *,
        extra_dirs: Sequence[Path] = (),
        protected_files: Sequence[Path] = (),
        max_bytes: int = 20 * 1024 * 1024,
        home: Path | None = None,
    ) -> None:
        self._roots_for = roots_for
        self._extra = tuple(extra_dirs)
        self._protected = tuple(protected_files)
        self.max_bytes = max_bytes
        self._home = home

    def _policy(self, roots: Sequence[Path]) -> MediaPolicy:
        return MediaPolicy([*roots, *self._extra], protected_files=self._protected,
                           home=self._home)

    def _too_big(self, name: str, size: int) -> str:
        return (f"⚠️ Attachment not sent: {name} ({human_size(size)}, over the "
                f"{human_size(self.max_bytes)} limit for files sent to chats)")

    def check(self, ref: MediaRef, platform: str, chat_id: str,
              user_id: str | None) -> OutboundAttachment | str:
        """The attachment to record for `ref` in a reply to `user_id` in the chat, or the
        note to show in the chat instead."""
        policy = self._policy(self._roots_for(platform, chat_id, user_id))
        decision = policy.check(ref.path)
        if not decision.allowed:
            return decision.note()
        root = policy.root_of(decision.path)
        try:
            size = decision.path.stat().st_size
        except OSError as exc:
            return f"⚠️ Attachment not sent: {decision.path.name} (unreadable: {type(exc).__name__})"
        if size > self.max_bytes:
            return self._too_big(decision.path.name, size)
        return OutboundAttachment(path=str(decision.path), as_document=ref.as_document,
                                  as_voice=ref.as_voice, root=str(root) if root else None)

    def load(self, att: OutboundAttachment, platform: str,
             chat_id: str) -> OutboundAttachment | str:
        """`att` with its checked content in `data`, or the note to show in the chat.

        The file must still lie in the folder it was allowed from (`att.root`); an attachment
        recorded without one (before this check existed) may come from the chat's cache or
        the operator's folders only."""
        name = Path(att.path).name
        if att.root:
            policy = MediaPolicy([Path(att.root)], protected_files=self._protected,
                                 home=self._home)
        else:
            policy = self._policy(self._roots_for(platform, chat_id, None))
        try:
            fd = os.open(att.path, _OPEN_FLAGS)
        except OSError as exc:
            return f"⚠️ Attachment not sent: {name} (cannot be opened: {type(exc).__name__})"
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return f"⚠️ Attachment not sent: {name} (not a regular file)"
            real = _opened_path(fd, att.path, st)
            if real is None:
                return f"⚠️ Attachment not sent: {name} (the file changed before sending)"
            reason = policy.refusal_for_real(real)
            if reason:
                return f"⚠️ Attachment not sent: {name} ({reason})"
            if st.st_size > self.max_bytes:
                return self._too_big(name, st.st_size)
            data = _read_at_most(fd, self.max_bytes + 1)
        except OSError as exc:
            return f"⚠️ Attachment not sent: {name} (unreadable: {type(exc).__name__})"
        finally:
            os.close(fd)
        if len(data) > self.max_bytes:
            return self._too_big(name, len(data))
        return att.model_copy(update={"data": data})


def _opened_path(fd: int, given: str, st: os.stat_result) -> Path | None:
    """The real path of the file open as `fd`: from /proc on Linux, `F_GETPATH` on macOS,
    else the resolved `given` path when it still names the same file. None when the file
    was unlinked or replaced."""
    with contextlib.suppress(OSError):
        link = os.readlink(f"/proc/self/fd/{fd}")
        return None if link.endswith(" (deleted)") else Path(link)
    try:
        import fcntl

        getpath = getattr(fcntl, "F_GETPATH", None)
        if getpath is not None:
            raw = fcntl.fcntl(fd, getpath, bytes(1024))
            return Path(os.fsdecode(raw.split(b"\0", 1)[0]))
    except OSError:
        return None
    real = Path(os.path.realpath(given))
    try:
        now = real.stat()
    except OSError:
        return None
    return real if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) else None


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total < limit:
        chunk = os.read(fd, min(1024 * 1024, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
