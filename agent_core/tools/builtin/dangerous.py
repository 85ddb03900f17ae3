"""Which shell commands need the user's approval before `terminal` runs them.

`needs_approval(command, workspace)` returns the reason (shown to the user) or None. The
check is deliberately broad: a false alarm costs one `/approve`, a miss can cost a machine.
Recursive deletes are judged by their targets: inside the workspace they run, anything else
(outside it, the workspace itself, anything with a variable, `~`, a glob or `..` that
leaves it) needs approval.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

__all__ = ["DANGEROUS_PATTERNS", "needs_approval"]

_I = re.IGNORECASE
DANGEROUS_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a fork bomb", re.compile(r"(\w+|:)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1\s*&")),
    ("a disk or filesystem change", re.compile(
        r"\b(mkfs(\.\w+)?|fdisk|sfdisk|parted|wipefs|mkswap|swapon|swapoff|mount|umount|"
        r"losetup|cryptsetup|shred)\b")),
    ("a write to a raw device", re.compile(r"\bdd\b[^;&|]*\bof=/dev/|>\s*/dev/(sd|nvme|hd|vd|"
                                           r"xvd|mmcblk|disk)")),
    ("a permission or ownership change", re.compile(
        r"\bchmod\b[^;&|]*(\s-\w*R|--recursive|\b0?777\b|\b[ao]\+\w*w|\+s\b)|"
        r"\b(chown|chgrp|setfacl|chattr)\b")),
    ("a download piped into an interpreter", re.compile(
        r"\b(curl|wget|fetch|nc|ncat)\b[^;&]*\|\s*(sudo\s+)?(env\s+)?"
        r"(ba|z|da|k|fi)?sh\b|\b(curl|wget)\b[^;&]*\|\s*(sudo\s+)?(python\d?|perl|ruby|node)\b|"
        r"\b(ba|z)?sh\s+(-c\s+)?[\"']?(<\(|\$\()\s*(curl|wget)", _I)),
    ("decoded content run by a shell", re.compile(
        r"\b(base64|xxd)\b[^;&]*(-d|--decode|-r)\b[^;&]*\|\s*(ba|z)?sh\b")),
    ("a privilege change", re.compile(r"(^|[;&|(]\s*|\s)(sudo|su|doas|pkexec)\b")),
    ("credential or secret files", re.compile(
        r"\.(ssh|aws|gnupg|kube|docker|netrc|git-credentials|pgpass|npmrc|pypirc|hermes)\b|"
        r"\bid_(rsa|ed25519|ecdsa|dsa)\b|/etc/(shadow|gshadow|passwd|sudoers)\b|"
        r"(^|[\s/'\"=<>])\.env\b|\bstate\.db\b|\bcredentials(\.json)?\b", _I)),
    ("a system service or power change", re.compile(
        r"\b(shutdown|reboot|halt|poweroff|systemctl|service|launchctl|init\s+[06])\b")),
    ("killing other processes", re.compile(r"\b(killall|pkill)\b|\bkill\b[^;&|]*\s-1\b")),
    ("a bulk delete", re.compile(r"\bfind\b[^;&|]*\s(-delete|-exec\s+rm)\b|\bxargs\b[^;&]*\brm\b")),
    ("a write to a system folder", re.compile(
        r">\s*/(etc|usr|bin|sbin|boot|lib|lib64|var|sys|proc|root)/|\btee\b[^;&|]*\s/(etc|usr|"
        r"boot|root)/")),
    ("a destructive git command", re.compile(
        r"\bgit\s+(push\b[^;&|]*(--force|\s-f\b)|reset\s+--hard|clean\s+-\w*f|branch\s+-D)")),
)
_SEPARATORS = re.compile(r"\|\||&&|[;|&\n]")
_WRAPPERS = frozenset({"sudo", "env", "command", "nice", "nohup", "time", "exec", "busybox"})


def _recursive_rm_outside(segment: str, workspace: Path) -> bool:
    try:
        words = shlex.split(segment, posix=True)
    except ValueError:
        words = segment.split()
    while words and (words[0] in _WRAPPERS or "=" in words[0]):
        words = words[1:]
    if not words or Path(words[0]).name not in ("rm", "rmdir"):
        return False
    flags = [w for w in words[1:] if w.startswith("-")]
    targets = [w for w in words[1:] if not w.startswith("-")]
    recursive = any(f in ("--recursive", "-r", "-R") or
                    (not f.startswith("--") and ("r" in f or "R" in f)) for f in flags)
    if not recursive:
        return False
    root = workspace.resolve()
    for target in targets or ["."]:
        if any(c in target for c in "$`~*?[{"):
            return True
        path = (root / target).resolve() if not target.startswith("/") else Path(target).resolve()
        if path == root or not path.is_relative_to(root):
            return True
    return False


def needs_approval(command: str, workspace: Path) -> str | None:
    """Why `command` needs the user's approval, or None when it may run. Never raises."""
    flat = re.sub(r"\\\n", " ", command)
    for reason, pattern in DANGEROUS_PATTERNS:
        if pattern.search(flat):
            return reason
    for segment in _SEPARATORS.split(flat):
        if _recursive_rm_outside(segment.strip().lstrip("({").strip(), workspace):
            return "a recursive delete outside the workspace"
    return None
