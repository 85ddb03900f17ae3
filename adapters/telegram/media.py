"""Inbound attachment downloads into the profile cache, with a size cap."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from telegram import Bot
from telegram.error import TelegramError

from adapters.telegram.convert import FileRef
from gateway.events import Attachment
from gateway.ports import EventLogger
from hermes_common.hosts import HostAllowList

__all__ = ["download_all"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _safe_name(name: str) -> str:
    cleaned = _UNSAFE.sub("_", name).strip("._") or "file"
    return cleaned[-80:]


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"


async def download_all(
    bot: Bot,
    refs: list[FileRef],
    dest: Path,
    *,
    prefix: str,
    cap: int,
    allowed: HostAllowList,
    logger: EventLogger | None = None,
) -> tuple[tuple[Attachment, ...], tuple[str, ...]]:
    """Download `refs` into `dest`; returns (attachments, notes for the text).

    The download URL carries the bot token: it is fetched only when its parsed host is the
    configured file server's (`allowed`). A file over `cap` bytes, or one that cannot be
    fetched, becomes a note instead of an attachment: the message still reaches the agent.
    Must not raise for platform errors.
    """
    attachments: list[Attachment] = []
    notes: list[str] = []
    for ref in refs:
        if ref.size is not None and ref.size > cap:
            notes.append(f"[attachment not downloaded: {ref.name} is {_mb(ref.size)}, "
                         f"over the {_mb(cap)} limit]")
            continue
        try:
            tg_file = await bot.get_file(ref.file_id)
            if tg_file.file_size is not None and tg_file.file_size > cap:
                notes.append(f"[attachment not downloaded: {ref.name} is "
                             f"{_mb(tg_file.file_size)}, over the {_mb(cap)} limit]")
                continue
            if tg_file.file_path is None or allowed.parse(tg_file.file_path) is None:
                if logger is not None:
                    logger.warning("telegram_file_url_refused", kind=ref.kind)
                notes.append(f"[attachment could not be downloaded: {ref.name}]")
                continue
            data = bytes(await tg_file.download_as_bytearray())
        except (TelegramError, OSError) as exc:
            if logger is not None:
                logger.warning("telegram_attachment_failed", kind=ref.kind,
                               error=type(exc).__name__)
            notes.append(f"[attachment could not be downloaded: {ref.name}]")
            continue
        if len(data) > cap:
            notes.append(f"[attachment not downloaded: {ref.name} is {_mb(len(data))}, "
                         f"over the {_mb(cap)} limit]")
            continue
        path = dest / f"{prefix}-{_safe_name(ref.unique_id)}-{_safe_name(ref.name)}"
        await asyncio.to_thread(_write, path, data)
        attachments.append(Attachment(path=str(path), kind=ref.kind, mime=ref.mime,
                                      name=ref.name, size=len(data)))
    return tuple(attachments), tuple(notes)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
