"""The getUpdates long-polling loop: fetching, separate from processing.

The update offset is advanced and persisted (`ctx.cursors`) only after `handle(update)`
returned, i.e. after the event was durably recorded, so a crash between fetch and record makes
Telegram deliver the update again (and the gateway's dedup drops the second copy).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import Bot, Update
from telegram import error as tg_error

from adapters.telegram.errors import error_text, retry_after_of
from adapters.telegram.settings import TelegramSettings
from gateway.ports import AdapterAuthError, AdapterContext, AdapterError
from hermes_common.backoff import Backoff
from hermes_common.waits import run_unless, sleep_unless

__all__ = ["ALLOWED_UPDATES", "CURSOR_KEY", "Poller"]

CURSOR_KEY = "update_offset"
ALLOWED_UPDATES = ["message", "callback_query"]
_MAX_BACKOFF_S = 30.0

Handler = Callable[[Update], Awaitable[None]]


class Poller:
    """Long-polls one bot until `stop` is set.

    `run()` raises `AdapterAuthError` when the token is refused, and `AdapterError` after
    `conflict_retries` consecutive 409 Conflicts (another poller or an active webhook), after
    `network_retries` consecutive network failures (so the supervisor rebuilds the transport),
    or when `handle` fails (the update is then not confirmed and will come again).
    """

    def __init__(self, bot: Bot, settings: TelegramSettings, ctx: AdapterContext,
                 handle: Handler, stop: asyncio.Event) -> None:
        self._bot = bot
        self._s = settings
        self._ctx = ctx
        self._handle = handle
        self._stop = stop
        self._conflict_pacing = Backoff(base_s=settings.conflict_backoff_s, cap_s=_MAX_BACKOFF_S)
        self._network_pacing = Backoff(base_s=settings.network_backoff_s, cap_s=_MAX_BACKOFF_S)

    async def run(self) -> None:
        offset = await self._load_offset()
        conflicts = failures = 0
        while not self._stop.is_set():
            try:
                done, batch = await run_unless(self._fetch(offset), self._stop)
            except tg_error.InvalidToken as exc:
                raise AdapterAuthError("Telegram refused the bot token during getUpdates") from exc
            except tg_error.Conflict as exc:
                conflicts += 1
                self._ctx.logger.warning("telegram_get_updates_conflict", attempt=conflicts,
                                         error=error_text(exc, self._s.plain_token()))
                if conflicts >= self._s.conflict_retries:
                    raise AdapterError(
                        f"telegram: {conflicts} consecutive 409 Conflicts from getUpdates. "
                        "Another process is polling this bot token (a second gateway or "
                        "profile with the same token?) or a webhook is set. Stop the other "
                        "poller or switch to webhook mode.") from exc
                await self._pause(self._conflict_pacing.delay(conflicts))
                continue
            except tg_error.RetryAfter as exc:
                await self._pause(retry_after_of(exc))
                continue
            except tg_error.NetworkError as exc:
                failures += 1
                self._ctx.logger.warning("telegram_get_updates_failed", attempt=failures,
                                         error=error_text(exc, self._s.plain_token()))
                if failures >= self._s.network_retries:
                    raise AdapterError(
                        f"telegram: getUpdates failed {failures} times in a row "
                        f"({error_text(exc, self._s.plain_token())})") from exc
                await self._pause(self._network_pacing.delay(failures))
                continue
            if not done or batch is None:
                return
            conflicts = failures = 0
            self._ctx.progress()
            for update_id, update in batch:
                if self._stop.is_set():
                    return
                if update is not None:
                    await self._deliver(update)
                offset = update_id + 1
                await self._ctx.cursors.set(CURSOR_KEY, str(offset))

    async def _deliver(self, update: Update) -> None:
        try:
            await self._handle(update)
        except asyncio.CancelledError:
            raise
        except AdapterError:
            raise
        except Exception as exc:
            raise AdapterError(
                f"telegram: recording update {update.update_id} failed "
                f"({type(exc).__name__}); it will be fetched again") from exc

    async def _load_offset(self) -> int | None:
        raw = await self._ctx.cursors.get(CURSOR_KEY)
        try:
            return int(raw) if raw else None
        except ValueError:
            self._ctx.logger.warning("telegram_cursor_unreadable", cursor=CURSOR_KEY)
            return None

    async def _fetch(self, offset: int | None) -> list[tuple[int, Update | None]]:
        try:
            updates = await self._bot.get_updates(
                offset=offset, timeout=int(self._s.poll_timeout_s),
                allowed_updates=ALLOWED_UPDATES)
        except tg_error.TelegramError:
            raise
        except Exception as exc:  # a batch that breaks PTB's schema: parse update by update
            self._ctx.logger.warning("telegram_update_batch_malformed", error=type(exc).__name__)
            return await self._fetch_raw(offset)
        return [(u.update_id, u) for u in updates]

    async def _fetch_raw(self, offset: int | None) -> list[tuple[int, Update | None]]:
        kwargs: dict[str, Any] = {"timeout": 0, "allowed_updates": ALLOWED_UPDATES}
        if offset is not None:
            kwargs["offset"] = offset
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw = await self._bot.do_api_request("get_updates", api_kwargs=kwargs)
        out: list[tuple[int, Update | None]] = []
        for item in raw if isinstance(raw, list) else []:
            update_id = item.get("update_id") if isinstance(item, dict) else None
            if not isinstance(update_id, int):
                continue
            try:
                out.append((update_id, Update.de_json(item, self._bot)))
            except Exception as exc:
                self._ctx.logger.warning("telegram_update_unparseable", source="polling",
                                         update_id=update_id, error=type(exc).__name__)
                out.append((update_id, None))
        if not out:  # nothing we could confirm: don't re-poll in a tight loop
            await self._pause(max(self._s.network_backoff_s, 1.0))
        return out

    async def _pause(self, seconds: float) -> None:
        await sleep_unless(seconds, self._stop)

