"""`MEDIA:/absolute/path` directives in a reply, and the policy deciding which files may go out.

A directive is a line of its own, outside fenced code, reading `MEDIA:/abs/path` (or `~/…`),
optionally with `[[as_document]]` / `[[audio_as_voice]]` on the same line. A modifier on a line
of its own applies to every directive of the reply. Quoted (`> MEDIA:…`) or fenced directives
are left alone, so a file path quoted from tool output is never re-sent.
"""

from __future__ import annotations

import asyncio
import fnmatch
import mimetypes
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hermes_common.text.split import code_fence_ranges

__all__ = [
    "MediaRef",
    "MediaDecision",
    "MediaPolicy",
    "extract_media",
    "DEFAULT_DENIED_DIRS",
    "DENIED_NAMES",
]

_AS_DOCUMENT = "[[as_document]]"
_AS_VOICE = "[[audio_as_voice]]"
_PREFIX = "MEDIA:"

DEFAULT_DENIED_DIRS: tuple[str, ...] = (
    "~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gcloud", "~/.kube", "~/.docker", "~/.azure",
    "/etc", "/proc", "/sys", "/dev", "/root", "/boot", "/var/log", "/var/lib", "/run",
)
DENIED_NAMES: tuple[str, ...] = (
    ".env", ".env.*", "id_rsa*", "id_ed25519*", "id_ecdsa*", "id_dsa*", ".netrc", ".pgpass",
)


@dataclass(frozen=True, slots=True)
class MediaRef:
    """One attachment the reply asked for (path as written, not yet checked)."""

    path: str
    as_document: bool = False
    as_voice: bool = False

    @property
    def kind(self) -> str:
        """"image", "audio", "video" or "document", guessed from the file name."""
        mime, _ = mimetypes.guess_type(self.path)
        major = (mime or "").split("/")[0]
        return major if major in ("image", "audio", "video") else "document"


def _directive(line: str) -> tuple[str, bool, bool] | None:
    stripped = line.strip()
    if not stripped.startswith(_PREFIX):
        return None
    rest = stripped[len(_PREFIX):]
    as_doc = _AS_DOCUMENT in rest
    as_voice = _AS_VOICE in rest
    rest = rest.replace(_AS_DOCUMENT, "").replace(_AS_VOICE, "").strip().strip("`'\"").strip()
    if not (rest.startswith("/") or rest.startswith("~/")):
        return None
    return rest, as_doc, as_voice


def extract_media(text: str) -> tuple[str, list[MediaRef]]:
    """Remove MEDIA directive lines from `text`; return (clean text, refs in order).

    Lines inside fenced code blocks are never touched. Must not raise.
    """
    fences = code_fence_ranges(text)
    out: list[str] = []
    found: list[tuple[str, bool, bool]] = []
    all_doc = all_voice = False
    pos = 0
    fi = 0
    for line in text.split("\n"):
        start = pos
        pos += len(line) + 1
        while fi < len(fences) and fences[fi][1] < start:
            fi += 1
        if fi < len(fences) and fences[fi][0] <= start <= fences[fi][1]:
            out.append(line)
            continue
        bare = line.strip()
        if bare in (_AS_DOCUMENT, _AS_VOICE):
            all_doc |= bare == _AS_DOCUMENT
            all_voice |= bare == _AS_VOICE
            continue
        hit = _directive(line)
        if hit is None:
            out.append(line)
        else:
            found.append(hit)
    refs = [MediaRef(p, d or all_doc, v or all_voice) for p, d, v in found]
    if not refs and not (all_doc or all_voice):
        return text, []
    clean = "\n".join(out)
    while "\n\n\n" in clean:
        clean = clean.replace("\n\n\n", "\n\n")
    return clean.strip("\n"), refs


@dataclass(frozen=True, slots=True)
class MediaDecision:
    """Outcome of a policy check. `path` is the resolved file to open when allowed;
    `reason` is a short user-visible explanation when refused."""

    allowed: bool
    path: Path
    reason: str = ""

    def note(self) -> str:
        """A line to show in the chat instead of a refused attachment."""
        return f"⚠️ Attachment not sent: {self.path.name or self.path} ({self.reason})"


def _real(p: str | Path, home: Path) -> Path:
    raw = str(p)
    if raw == "~" or raw.startswith("~/"):
        raw = str(home) + raw[1:]
    return Path(os.path.realpath(raw))


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class MediaPolicy:
    """Which local files a reply may attach.

    Allowed: regular files under `allowed_dirs`. Refused, whatever the allow-list says: files
    named like credentials (`DENIED_NAMES`), `protected_files` (the profile's .env and
    state.db), and anything under `denied_dirs` unless an allowed dir lies deeper inside that
    denied dir (so a profile under /root still works). Symlinks are resolved before any check,
    and the link itself is checked too.
    """

    def __init__(
        self,
        allowed_dirs: Iterable[str | Path],
        denied_dirs: Iterable[str | Path] = DEFAULT_DENIED_DIRS,
        *,
        protected_files: Iterable[str | Path] = (),
        home: Path | None = None,
    ) -> None:
        self._home = Path(home) if home is not None else Path(os.path.expanduser("~"))
        self.allowed: tuple[Path, ...] = tuple(_real(d, self._home) for d in allowed_dirs)
        self.denied: tuple[Path, ...] = tuple(_real(d, self._home) for d in denied_dirs)
        self.protected: frozenset[Path] = frozenset(_real(f, self._home) for f in protected_files)

    @classmethod
    def for_profile(
        cls,
        profile_root: str | Path,
        extra_dirs: Sequence[str | Path] = (),
        *,
        home: Path | None = None,
    ) -> MediaPolicy:
        """Policy for one profile: its cache/ and workspace/ plus `extra_dirs`
        (`gateway.media.allowed_dirs`); its .env and state.db are protected."""
        root = Path(profile_root)
        protected = [root / n for n in (".env", "state.db", "state.db-wal", "state.db-shm")]
        return cls([root / "cache", root / "workspace", *extra_dirs],
                   protected_files=protected, home=home)

    def _deepest(self, path: Path, roots: tuple[Path, ...]) -> int:
        return max((len(r.parts) for r in roots if _under(path, r)), default=-1)

    def _refusal(self, path: Path) -> str:
        for name in DENIED_NAMES:
            if fnmatch.fnmatchcase(path.name, name):
                return "credential file"
        if path in self.protected:
            return "protected profile file"
        denied = self._deepest(path, self.denied)
        if denied >= 0 and denied >= self._deepest(path, self.allowed):
            return "protected system or credentials location"
        return ""

    def refusal_for_real(self, path: Path) -> str:
        """Why the already-resolved `path` (e.g. the real path of a file the caller holds
        open) may not be sent, or "" when it may. Touches no filesystem."""
        reason = self._refusal(path)
        if not reason and self._deepest(path, self.allowed) < 0:
            reason = "outside the allowed media folders"
        return reason

    def root_of(self, path: Path) -> Path | None:
        """The deepest allowed folder holding the resolved `path` (None when none does)."""
        holding = [r for r in self.allowed if _under(path, r)]
        return max(holding, key=lambda r: len(r.parts)) if holding else None

    def check(self, path: str | Path) -> MediaDecision:
        """Decide whether `path` may be sent. Touches the filesystem (realpath, stat): from
        async code use `acheck`. Must not raise."""
        raw = str(path).strip()
        try:
            if not (raw.startswith("/") or raw.startswith("~/")):
                return MediaDecision(False, Path(raw), "not an absolute path")
            literal = Path(os.path.abspath(str(self._home) + raw[1:] if raw[0] == "~" else raw))
            resolved = _real(raw, self._home)
            for candidate in (literal, resolved):
                reason = self._refusal(candidate)
                if reason:
                    return MediaDecision(False, resolved, reason)
            if self._deepest(resolved, self.allowed) < 0:
                return MediaDecision(False, resolved, "outside the allowed media folders")
            if not resolved.is_file():
                return MediaDecision(False, resolved, "no such file")
            return MediaDecision(True, resolved)
        except (OSError, ValueError) as exc:
            return MediaDecision(False, Path(raw), f"unreadable path ({type(exc).__name__})")

    async def acheck(self, path: str | Path) -> MediaDecision:
        """`check` run off the event loop. Must not raise."""
        return await asyncio.to_thread(self.check, path)
