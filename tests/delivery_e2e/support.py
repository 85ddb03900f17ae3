"""Test support for the delivery end-to-end tests: a FakeAdapter that time-stamps every call
and can fail chosen calls, one that kills its own process on the final send, and a small
child-process entry point for the kill -9 recovery test."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.fake import FakeAdapter, FakeCall
from gateway.events import ErrorKind, OutboundAttachment, OutboundMessage, SendResult

__all__ = ["KillOnFinalAdapter", "Rule", "Stamp", "TimedFakeAdapter", "chat_cache",
           "profile_files", "strip_cursor"]

CURSOR_CHAR = "▌"


def strip_cursor(text: str) -> str:
    return text.replace(CURSOR_CHAR, "").rstrip()


def _spaces(home: Path) -> Any:
    from gateway.paths import ProfilePaths
    from gateway.principals import UserSpaces

    paths = ProfilePaths(home)
    return UserSpaces(memories=paths.memories, workspace_root=paths.workspace,
                      cache=paths.cache)


def chat_cache(home: Path, chat_id: str, platform: str = "fake") -> Path:
    """The cache folder of one chat in the profile `home` (created): where its inbound
    attachments are kept, and one of the places a reply in that chat may attach files from."""
    folder = _spaces(home).chat_cache(platform, chat_id)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def profile_files(home: Path) -> Any:
    """The `OutboundFiles` a gateway on the profile `home` uses, with default settings."""
    from gateway.config.models import HermesConfig
    from gateway.paths import ProfilePaths
    from gateway.wiring import outbound_files

    return outbound_files(HermesConfig(), ProfilePaths(home), _spaces(home))


@dataclass(frozen=True, slots=True)
class Stamp:
    """One platform call with the monotonic time it started."""

    op: str
    chat_id: str
    at: float
    ok: bool
    text: str | None
    formatted: bool
    error_kind: ErrorKind | None


@dataclass(slots=True)
class Rule:
    """Fail the next `count` calls matching op / chat / formatted with `kind`."""

    kind: ErrorKind
    op: str | None = None
    chat_id: str | None = None
    formatted: bool | None = None
    retry_after: float | None = None
    count: int = 1
    hits: list[float] = field(default_factory=list)

    def matches(self, op: str, chat_id: str, formatted: bool) -> bool:
        return (self.count > 0 and (self.op is None or self.op == op)
                and (self.chat_id is None or self.chat_id == chat_id)
                and (self.formatted is None or self.formatted == formatted))


class TimedFakeAdapter(FakeAdapter):
    """FakeAdapter recording `stamps` (op, chat, time, outcome) and applying `rules`."""

    def __init__(self, name: str = "fake", **kw: Any) -> None:
        super().__init__(name, **kw)
        self.stamps: list[Stamp] = []
        self.rules: list[Rule] = []
        #: Seconds every formatted (final) send or edit takes, to widen race windows.
        self.slow_final_s = 0.0
        #: Seconds a preview (unformatted) send takes to answer after the message exists:
        #: a slow network between the platform's write and its reply.
        self.slow_preview_ack_s = 0.0

    def fail_when(self, kind: ErrorKind | str, **kw: Any) -> Rule:
        rule = Rule(ErrorKind(kind), **kw)
        self.rules.append(rule)
        return rule

    def _scripted(self, op: str, chat_id: str, formatted: bool, text: str | None) -> SendResult | None:
        for rule in self.rules:
            if rule.matches(op, chat_id, formatted):
                rule.count -= 1
                rule.hits.append(time.monotonic())
                res = SendResult.failure(rule.kind, f"scripted {rule.kind.value}",
                                         retry_after=rule.retry_after)
                self.calls.append(FakeCall(op, chat_id, res, None, text, formatted))  # type: ignore[arg-type]
                self._stamp(op, chat_id, res, text, formatted)
                return res
        return None

    def _stamp(self, op: str, chat_id: str, res: SendResult, text: str | None,
               formatted: bool, started: float | None = None) -> None:
        at = time.monotonic() if started is None else started
        self.stamps.append(Stamp(op, chat_id, at, res.ok, text, formatted, res.error_kind))

    def ops(self, op: str, chat_id: str | None = None, *, ok: bool | None = True) -> list[Stamp]:
        return [s for s in self.stamps if s.op == op and (chat_id is None or s.chat_id == chat_id)
                and (ok is None or s.ok == ok)]

    async def send(self, message: OutboundMessage) -> SendResult:
        started = time.monotonic()
        res = self._scripted("send", message.chat_id, message.formatted, message.text)
        if res is None:
            if message.formatted and self.slow_final_s:
                await asyncio.sleep(self.slow_final_s)
            res = await super().send(message)
            self._stamp("send", message.chat_id, res, message.text, message.formatted, started)
            if not message.formatted and self.slow_preview_ack_s:
                await asyncio.sleep(self.slow_preview_ack_s)
        return res

    async def edit(self, chat_id: str, message_id: str, text: str, *,
                   formatted: bool = True) -> SendResult:
        started = time.monotonic()
        res = self._scripted("edit", chat_id, formatted, text)
        if res is None:
            if formatted and self.slow_final_s:
                await asyncio.sleep(self.slow_final_s)
            res = await super().edit(chat_id, message_id, text, formatted=formatted)
            self._stamp("edit", chat_id, res, text, formatted, started)
        return res

    async def typing(self, chat_id: str, thread_id: str | None = None) -> SendResult:
        res = self._scripted("typing", chat_id, False, None)
        if res is None:
            res = await super().typing(chat_id, thread_id)
            self._stamp("typing", chat_id, res, None, False)
        return res

    async def send_media(self, chat_id: str, attachment: OutboundAttachment, *,
                         thread_id: str | None = None, caption: str | None = None) -> SendResult:
        res = await super().send_media(chat_id, attachment, thread_id=thread_id, caption=caption)
        self._stamp("media", chat_id, res, attachment.path, False)
        return res


class KillOnFinalAdapter(FakeAdapter):
    """Dies by SIGKILL when asked to send or edit in the final (formatted) text: the process
    ends between the model's final answer (already in the outbox) and the platform send."""

    async def send(self, message: OutboundMessage) -> SendResult:
        if message.formatted:
            os.kill(os.getpid(), signal.SIGKILL)
        return await super().send(message)

    async def edit(self, chat_id: str, message_id: str, text: str, *,
                   formatted: bool = True) -> SendResult:
        if formatted:
            os.kill(os.getpid(), signal.SIGKILL)
        return await super().edit(chat_id, message_id, text, formatted=formatted)


async def _child(mode: str, home: Path, model_url: str, out: Path) -> None:
    from gateway.paths import ProfilePaths, ensure_profile_dirs
    from gateway.runner import GatewayRunner
    from tests.integration.harness import make_config

    class _Model:
        base_url = model_url

    paths = ensure_profile_dirs(ProfilePaths(home))
    adapter = KillOnFinalAdapter("fake") if mode == "crash" else FakeAdapter("fake")
    runner = GatewayRunner(make_config(_Model(), gateway__streaming__edit_interval_s=0.05),
                           paths, adapters={"fake": adapter}, health_port=0)
    await runner.start()
    try:
        if mode == "crash":
            await adapter.inject("tell me the answer", chat_id="c1", user_id="u1")
            await asyncio.sleep(30)  # the adapter kills this process before this ends
            raise SystemExit(3)
        await adapter.wait_for_messages("c1", 1, timeout_s=15)
        await asyncio.sleep(0.5)  # room for a duplicate to show up
        out.write_text(json.dumps({"messages": adapter.messages("c1"),
                                   "formatted": [m.formatted for m in adapter.sent("c1")]}))
    finally:
        await runner.shutdown()


if __name__ == "__main__":
    asyncio.run(_child(sys.argv[1], Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])))
