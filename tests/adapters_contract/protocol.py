"""The harness every platform provides for the shared adapter contract suite.

A harness owns a fake platform server on 127.0.0.1 that speaks the platform's real protocol,
and builds the real adapter (unmodified SDK) pointed at it through config base URLs. The
contract tests (test_contract_*.py) are written once against this protocol and parametrized
over every platform's harness. Each platform package adds `harness_<platform>.py` exposing
`async def make_harness(tmp_path) -> PlatformHarness` (an async context manager).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gateway.events import MessageEvent
from gateway.ports import AdapterContext, BasePlatformAdapter


@dataclass(slots=True)
class BotMessage:
    """A message the bot posted, as the fake platform stores it (final visible state)."""

    message_id: str
    chat_id: str
    text: str
    thread_id: str | None = None
    reply_to: str | None = None
    edits: int = 0
    attachments: list[str] = field(default_factory=list)  # file names uploaded


class PlatformHarness(Protocol):
    platform: str
    adapter: BasePlatformAdapter
    #: every MessageEvent the adapter emitted, in order (recorded by the harness's ctx)
    emitted: list[MessageEvent]
    dm_chat: str
    group_chat: str

    async def __aenter__(self) -> PlatformHarness: ...

    async def __aexit__(self, *exc: object) -> None: ...

    def context(self) -> AdapterContext:
        """The AdapterContext the harness started the adapter with."""

    async def start(self) -> None:
        """Start the adapter (as a task) and wait until it called ctx.connected()."""

    async def user_says(
        self,
        text: str,
        *,
        chat: str | None = None,
        group: bool = False,
        thread: str | None = None,
        mention: bool = False,
        reply_to_bot_message: str | None = None,
        attachment: Path | None = None,
        redeliver: bool = False,
    ) -> None:
        """Make the fake platform deliver a user message (or redeliver the previous one)."""

    async def wait_emitted(self, n: int, timeout_s: float = 5.0) -> list[MessageEvent]: ...

    def bot_messages(self, chat: str) -> list[BotMessage]: ...

    def typing_calls(self, chat: str) -> int: ...

    def rate_limit_next_send(self, retry_after_s: float) -> None:
        """The next send/post answers the platform's 429 with this retry-after."""

    async def drop_connection(self) -> None:
        """Drop the live connection (long poll / websocket) the way the platform would."""
