"""Unpacking a skill archive (`.zip`, `.tar`, `.tar.gz`, `.tgz`) for `hermes skills install`.

Members are checked before anything is written: no absolute paths, no `..`, no links or
device files, at most `MAX_MEMBERS` files and `MAX_TOTAL_BYTES` in all. The skill is the
archive's root or its single top-level folder (whichever holds SKILL.md).
"""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from agent_core.skills.store import SKILL_FILE, SkillError

__all__ = ["MAX_MEMBERS", "MAX_TOTAL_BYTES", "is_archive", "unpack_skill"]

MAX_MEMBERS = 200
MAX_TOTAL_BYTES = 20 << 20
_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz")


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(_SUFFIXES)


def _safe(name: str) -> PurePosixPath:
    rel = PurePosixPath(name.replace("\\", "/"))
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise SkillError(f"archive member {name!r} leads outside the skill")
    return rel


def _check_totals(count: int, total: int) -> None:
    if count > MAX_MEMBERS:
        raise SkillError(f"the archive holds more than {MAX_MEMBERS} files")
    if total > MAX_TOTAL_BYTES:
        raise SkillError(f"the archive unpacks to more than {MAX_TOTAL_BYTES:,} bytes")


def _unzip(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        _check_totals(len(infos), sum(i.file_size for i in infos))
        for info in infos:
            if (info.external_attr >> 16) & 0o170000 == 0o120000:
                raise SkillError(f"{info.filename} is a symlink; skills may not hold links")
            target = dest / _safe(info.filename)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))


def _untar(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tf:
        members = [m for m in tf.getmembers() if not m.isdir()]
        for m in members:
            if not m.isfile():
                raise SkillError(f"{m.name} is not a regular file; skills hold only files")
        _check_totals(len(members), sum(m.size for m in members))
        for m in members:
            target = dest / _safe(m.name)
            src = tf.extractfile(m)
            if src is None:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(src.read())


def unpack_skill(archive: Path, dest: Path) -> Path:
    """Unpack `archive` into the empty folder `dest`; returns the folder holding SKILL.md."""
    try:
        if archive.name.lower().endswith(".zip"):
            _unzip(archive, dest)
        else:
            _untar(archive, dest)
    except (zipfile.BadZipFile, tarfile.TarError, OSError) as exc:
        raise SkillError(f"cannot unpack {archive.name}: {type(exc).__name__}") from None
    if (dest / SKILL_FILE).is_file():
        return dest
    tops = [p for p in dest.iterdir() if p.is_dir()]
    if len(tops) == 1 and (tops[0] / SKILL_FILE).is_file():
        return tops[0]
    raise SkillError(f"{archive.name} holds no {SKILL_FILE} at its root or in one folder")
