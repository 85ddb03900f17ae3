"""Slack files: inbound downloads into the profile cache, outbound v2 uploads."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient
from yarl import URL

from gateway.events import Attachment, SkippedFile
from gateway.ports import DownloadBudget, EventLogger
from hermes_common.hosts import HostAllowList

__all__ = ["FileFetcher", "kind_for", "upload_file"]

Kind = Literal["image", "audio", "voice", "video", "document", "other"]
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def kind_for(mime: str | None, subtype: str | None = None) -> Kind:
    mime = (mime or "").lower()
    if subtype == "slack_audio":
        return "voice"
    if mime.startswith("image/"):
        return "image"
    if mime.startswith("audio/"):
        return "audio"
    if mime.startswith("video/"):
        return "video"
    return "document" if mime else "other"


def _safe_name(file_id: str, name: str) -> str:
    base = _UNSAFE.sub("_", Path(name).name).strip("._") or "file"
    return f"{_UNSAFE.sub('_', file_id)}_{base[:120]}"


#: Redirects followed for one download (each hop is checked like the first URL).
MAX_REDIRECTS = 3


class FileFetcher:
    """Downloads `url_private_download` files with the bot token.

    The token is only sent to Slack's own hosts (`slack.com` and its subdomains, https) or the
    configured API origin, checked on the parsed URL of the first request and of every
    redirect hop (`hermes_common.hosts`), so a crafted file URL cannot make the adapter leak it.
    """

    def __init__(self, token: str, api_base_url: str) -> None:
        self._token = token
        self.allowed = HostAllowList.of(domains=["slack.com"], origins=[api_base_url])

    async def fetch_all(
        self, files: list[Mapping[str, Any]], cache_dir: Path, budget: DownloadBudget,
        logger: EventLogger, *, timeout_s: float = 60.0,
    ) -> tuple[tuple[Attachment, ...], tuple[SkippedFile, ...]]:
        """Download every file it may within `budget`, each within `timeout_s`; the others
        come back as `SkippedFile`s with the reason (the gateway tells the user and the
        model). Must not raise (except cancellation)."""
        out: list[Attachment] = []
        skipped: list[SkippedFile] = []
        for f in files:
            name = str(f.get("name") or f.get("title") or "file")
            try:
                async with asyncio.timeout(timeout_s):
                    got = await self._fetch(f, cache_dir, budget)
            except asyncio.CancelledError:
                raise
            except TimeoutError:
                got = f"the download took longer than {timeout_s:g} s"
            except Exception as exc:  # noqa: BLE001 - one bad file never drops the message
                got = f"the download failed ({type(exc).__name__})"
            if isinstance(got, str):
                logger.warning("slack_file_skipped", file_id=str(f.get("id")), reason=got)
                skipped.append(budget.skipped(name, got))
            else:
                out.append(got)
        return tuple(out), tuple(skipped)

    async def _fetch(
        self, f: Mapping[str, Any], cache_dir: Path, budget: DownloadBudget
    ) -> Attachment | str:
        """The downloaded file, or why it was not downloaded."""
        url = f.get("url_private_download") or f.get("url_private")
        size = int(f.get("size") or 0)
        target = self.allowed.parse(url) if isinstance(url, str) else None
        if target is None:
            return "its address is not one of Slack's file hosts"
        if (why := budget.refusal(size)) is not None:
            return why
        cap = budget.cap()
        headers = {"Authorization": f"Bearer {self._token}"}
        chunks: list[bytes] = []
        total = 0
        async with aiohttp.ClientSession(trust_env=False) as session:
            for _hop in range(MAX_REDIRECTS + 1):
                async with session.get(target, headers=headers, allow_redirects=False) as resp:
                    if resp.status in (301, 302, 303, 307, 308):
                        nxt = target.join(URL(resp.headers.get("Location", "")))
                        if not self.allowed.allows(nxt):
                            # never follow the token off Slack's hosts
                            return "it redirected to a host that is not Slack's"
                        target = nxt
                        continue
                    if resp.status != 200:
                        return f"Slack answered HTTP {resp.status}"
                    async for chunk in resp.content.iter_chunked(64 * 1024):
                        total += len(chunk)
                        if total > cap:
                            return budget.refusal(total) or budget.refusal(None) or "too large"
                        chunks.append(chunk)
                    break
            else:
                return "too many redirects"
        budget.take(total)
        name = str(f.get("name") or f.get("title") or "file")
        path = cache_dir / "slack" / _safe_name(str(f.get("id") or "F"), name)
        await asyncio.to_thread(_write, path, b"".join(chunks))
        mime = f.get("mimetype") if isinstance(f.get("mimetype"), str) else None
        return Attachment(path=str(path), kind=kind_for(mime, f.get("subtype")), mime=mime,
                          name=name, size=total)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


async def upload_file(
    client: AsyncWebClient,
    *,
    channel: str,
    name: str,
    data: bytes,
    thread_ts: str | None,
    caption: str | None,
) -> str:
    """Upload `data` as the file `name` through the v2 flow (getUploadURLExternal → upload →
    completeUploadExternal); returns the file id. Raises what the SDK raises."""
    kwargs: dict[str, Any] = {"channel": channel, "file": data, "filename": name,
                              "title": name}
    if thread_ts:
        kwargs["thread_ts"] = thread_ts
    if caption:
        kwargs["initial_comment"] = caption
    resp = await client.files_upload_v2(**kwargs)
    file = resp.get("file") or {}
    return str(file.get("id") or "")
