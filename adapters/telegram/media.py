"""Inbound attachment downloads into the profile cache, within the message's budget."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from telegram import Bot
from telegram.error import TelegramError

from adapters.telegram.convert import FileRef
from gateway.events import Attachment, SkippedFile
from gateway.ports import DownloadBudget, EventLogger
from hermes_common.hosts import HostAllowList

__all__ = ["download_all"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _safe_name(name: str) -> str:
    cleaned = _UNSAFE.sub("_", name).strip("._") or "file"
    return cleaned[-80:]


async def download_all(
    bot: Bot,
    refs: list[FileRef],
    dest: Path,
    *,
    prefix: str,
    budget: DownloadBudget,
    allowed: HostAllowList,
    timeout_s: float = 60.0,
    logger: EventLogger | None = None,
) -> tuple[tuple[Attachment, ...], tuple[SkippedFile, ...]]:
    """Download `refs` into `dest` within `budget`, each (getFile and the download) within
    `timeout_s`; returns (attachments, the files not downloaded with why).

    The download URL carries the bot token: it is fetched only when its parsed host is the
    configured file server's (`allowed`). A file over the budget, or one that cannot be
    fetched, is skipped instead of downloaded: the message still reaches the agent, and the
    gateway tells the user. Must not raise for platform errors.
    """
    attachments: list[Attachment] = []
    skipped: list[SkippedFile] = []
    for ref in refs:
        try:
            async with asyncio.timeout(timeout_s):
                got = await _download(bot, ref, budget, allowed, logger)
        except TimeoutError:
            got = f"the download took longer than {timeout_s:g} s"
        except (TelegramError, OSError) as exc:
            if logger is not None:
                logger.warning("telegram_attachment_failed", kind=ref.kind,
                               error=type(exc).__name__)
            got = "it could not be downloaded"
        if isinstance(got, str):
            skipped.append(budget.skipped(ref.name, got))
            continue
        budget.take(len(got))
        path = dest / f"{prefix}-{_safe_name(ref.unique_id)}-{_safe_name(ref.name)}"
        await asyncio.to_thread(_write, path, got)
        attachments.append(Attachment(path=str(path), kind=ref.kind, mime=ref.mime,
                                      name=ref.name, size=len(got)))
    return tuple(attachments), tuple(skipped)


async def _download(bot: Bot, ref: FileRef, budget: DownloadBudget, allowed: HostAllowList,
                    logger: EventLogger | None) -> bytes | str:
    """The file's bytes, or why it was not downloaded."""
    if (why := budget.refusal(ref.size)) is not None:
        return why
    tg_file = await bot.get_file(ref.file_id)
    if (why := budget.refusal(tg_file.file_size)) is not None:
        return why
    if tg_file.file_path is None or allowed.parse(tg_file.file_path) is None:
        if logger is not None:
            logger.warning("telegram_file_url_refused", kind=ref.kind)
        return "its address is not the configured file server's"
    data = bytes(await tg_file.download_as_bytearray())
    return budget.refusal(len(data)) or data


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
