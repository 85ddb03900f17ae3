"""The contract between the gateway and a platform adapter.

An adapter implements `BasePlatformAdapter`: a small required core (`start`, `stop`, `send`)
and optional capabilities it declares in `Capabilities` (markup dialect, limits, rate profile,
typing, …). The gateway never branches on a platform name; it reads capabilities, the common
keys of the adapter's settings (`PlatformSettings`) and its `identity`.

Adapters are found through the `hermes.adapters` entry-point group: each entry point names an
`AdapterSpec`, which carries the adapter's settings model (importable without the platform
SDK, so configuration checks stay fast) and a factory that imports the SDK only when called.
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from gateway.events import (
    ErrorKind,
    InteractionEvent,
    MessageEvent,
    OutboundAttachment,
    OutboundMessage,
    SendResult,
    SkippedFile,
)
from gateway.platform_settings import (
    PlatformSettings,
    SettingsProblem,
    TokenSettings,
    ToolProgress,
)

if TYPE_CHECKING:  # asyncio only names a type here; configuration checks import this module
    import asyncio

__all__ = [
    "AdapterAuthError",
    "AdapterContext",
    "AdapterError",
    "AdapterFatalError",
    "AdapterSpec",
    "BasePlatformAdapter",
    "BudgetSpec",
    "Capabilities",
    "CursorStore",
    "DeliveryRef",
    "DownloadBudget",
    "EventLogger",
    "Identity",
    "IntakeShards",
    "PlatformSettings",
    "RateProfile",
    "RateWindow",
    "SettingsProblem",
    "TokenSettings",
    "ToolProgress",
    "attachment_bytes",
    "lazy_factory",
]

@dataclass(frozen=True, slots=True)
class RateWindow:
    """At most `limit` calls per `period_s` seconds (a token bucket of that capacity)."""

    limit: int
    period_s: float


@dataclass(frozen=True, slots=True)
class BudgetSpec:
    """The limits of one chat. `cosmetic_reserve` is the share of each bucket kept for
    non-cosmetic calls; `cosmetic_quiet_s` is how long cosmetic traffic stays off after a
    server throttle ends. No windows = unlimited."""

    windows: tuple[RateWindow, ...] = ()
    cosmetic_reserve: float = 0.2
    cosmetic_quiet_s: float = 60.0


@dataclass(frozen=True, slots=True)
class RateProfile:
    """A platform's outbound limits for one chat: `per_chat`, unless `by_chat_type` has an
    entry for the chat's type ("dm", "group", "channel", "thread"). Sends, edits, typing and
    deletes of one chat all draw on that chat's budget (`gateway.ratelimit`). The budgets are
    per chat only: no limit across all chats of a platform is enforced."""

    per_chat: BudgetSpec = BudgetSpec((RateWindow(1, 1.0),))
    by_chat_type: tuple[tuple[str, BudgetSpec], ...] = ()

    def spec_for(self, chat_type: str) -> BudgetSpec:
        for kind, spec in self.by_chat_type:
            if kind == chat_type:
                return spec
        return self.per_chat


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the bot is on its platform, known once connected."""

    id: str
    username: str | None = None


class AdapterError(Exception):
    """A transport failure; the supervisor restarts the adapter with backoff."""


class AdapterFatalError(AdapterError):
    """A failure a restart cannot fix (refused credentials, an address another program
    holds). The adapter is not restarted; when every adapter fails so at start, exit 78."""


class AdapterAuthError(AdapterFatalError):
    """Credentials were refused. Fatal for this adapter: it is not restarted."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a platform can do. Delivery adapts to these; absent features degrade explicitly."""

    edit: bool = False
    typing: bool = False
    reactions: bool = False
    threads: bool = False
    media: bool = False
    delete: bool = False
    max_length: int = 4000
    length_measure: Literal["chars", "utf16"] = "chars"
    #: The markup replies are converted to: a dialect name of `hermes_common.text`
    #: (`DIALECT_NAMES`); the gateway passes it through without looking at it.
    dialect: str = "markdown"
    rate_profile: RateProfile = RateProfile()
    #: Seconds without progress after which the supervisor restarts the adapter (0 = never).
    liveness_window_s: float = 0.0
    #: The adapter authenticates its users itself (e.g. the HTTP API's bearer keys), so the
    #: gateway's allow-lists and pairing do not apply to it.
    trusted_auth: bool = False
    #: The platform can deliver a message nobody is waiting for (a chat). A request/response
    #: API cannot, so turns a restart interrupted are not re-run for it (nobody would get
    #: the answer; the model call would be wasted).
    push: bool = True
    #: Another process with the same configuration can reply into its chats (a platform's
    #: API). False when only the process that received the event can (an HTTP response, a
    #: local terminal's socket): with gateway replicas its commands then run on the
    #: replica that received them, not on the session's owner.
    reply_anywhere: bool = True
    #: Its user is the operator of this machine (a terminal chat): always an admin, whatever
    #: `gateway.admins` says.
    operator: bool = False
    #: Only one connection may receive for the bot's credential at a time (long polling, a
    #: Socket Mode or gateway connection). With several gateway replicas one of them at a
    #: time receives (it holds a leader lease); the others start the adapter with
    #: `AdapterContext.intake` False: connected for sending only.
    exclusive_intake: bool = False
    #: An `exclusive_intake` split into this many shards (Discord's gateway sharding), each
    #: received over its own connection. With several replicas each shard is its own leader
    #: role, so the shards spread over the replicas; the adapter runs the shards
    #: `AdapterContext.shards` names (every one when it is None).
    intake_shards: int = 1


class IntakeShards(Protocol):
    """Which shards of a sharded intake (`Capabilities.intake_shards` > 1) this replica runs
    now. The set changes while the adapter runs (a shard lease taken, moved or lost): the
    adapter starts and stops single shards without restarting the others."""

    def held(self) -> frozenset[int]:
        """The shard ids this replica holds now."""
        ...

    async def wait_change(self, seen: frozenset[int]) -> frozenset[int]:
        """The held set as soon as it differs from `seen` (at once when it already does).
        Cancellable; any number of waiters."""
        ...


class CursorStore:
    """Durable per-adapter cursors (e.g. a Telegram update offset)."""

    async def get(self, name: str) -> str | None:  # pragma: no cover - interface
        raise NotImplementedError

    async def set(self, name: str, value: str) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class EventLogger(Protocol):
    """What an adapter logs through (`AdapterContext.logger`): a structlog bound logger.

    Every call is an event name in snake_case with fields, never prose or a format string:
    `ctx.logger.warning("telegram_get_updates_failed", attempt=3, error="TimedOut")`. A stdlib
    `logging.Logger` does not fit (it takes no keyword fields). Logging must not raise.
    """

    def debug(self, event: str, /, **fields: Any) -> Any: ...
    def info(self, event: str, /, **fields: Any) -> Any: ...
    def warning(self, event: str, /, **fields: Any) -> Any: ...
    def error(self, event: str, /, **fields: Any) -> Any: ...
    def exception(self, event: str, /, **fields: Any) -> Any: ...
    def critical(self, event: str, /, **fields: Any) -> Any: ...


async def _no_interactions(event: InteractionEvent) -> bool:
    return False


@dataclass(slots=True)
class AdapterContext:
    """Given to `start()`.

    `emit(event)` returns once the event is durably recorded (or recognized as a duplicate):
    only then may an adapter acknowledge or advance its cursor. It returns True when the event
    was new. `interact(event)` is the same for a button press (`InteractionEvent`). `progress()` reports liveness (a successful poll or a received frame). `logger`
    takes events with fields (`EventLogger`); the gateway binds `adapter=<name>` to it.
    """

    name: str
    emit: Callable[[MessageEvent], Awaitable[bool]]
    progress: Callable[[], None]
    stop_event: asyncio.Event
    cursors: CursorStore
    cache_dir: Path
    logger: EventLogger
    connected: Callable[[], None] = field(default=lambda: None)
    max_attachment_bytes: int = 25 * 1024 * 1024
    interact: Callable[[InteractionEvent], Awaitable[bool]] = field(default=_no_interactions)
    #: False: connect for sending only and receive nothing (an `exclusive_intake` adapter on
    #: a replica that is not its leader); call `connected()` once sends work, then wait
    #: for the stop. Adapters without `exclusive_intake` are always started with True.
    intake: bool = True
    #: All files of one message together (`gateway.media.max_message_mb`).
    max_message_bytes: int = 50 * 1024 * 1024
    #: Images per message, the same on every platform (`gateway.media.max_images_per_message`).
    max_images: int = 4
    #: One download may take this long, from the request to its last byte
    #: (`gateway.media.download_timeout_s`).
    download_timeout_s: float = 60.0
    #: A sharded intake on a replica (`Capabilities.intake_shards` > 1): the shards this
    #: replica runs. None: run every shard (one gateway, or an unsharded intake).
    shards: IntakeShards | None = None

    def download_budget(self) -> DownloadBudget:
        """A fresh per-message budget (one per inbound message)."""
        return DownloadBudget(self.max_attachment_bytes, self.max_message_bytes)


def _mb(n: int) -> str:
    if n < 1024 * 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


class DownloadBudget:
    """What one inbound message may still download: each file at most `file_bytes`, all of
    them together at most `message_bytes`. Every adapter asks it before and while it
    downloads, and turns a refusal into a `SkippedFile` (the message itself always goes)."""

    def __init__(self, file_bytes: int, message_bytes: int) -> None:
        self.file_bytes = file_bytes
        self.message_bytes = message_bytes
        self.used = 0

    def cap(self) -> int:
        """The most the next file may have (the smaller of the two limits left)."""
        return max(0, min(self.file_bytes, self.message_bytes - self.used))

    def refusal(self, size: int | None) -> str | None:
        """Why a file of `size` bytes (None: not known yet) may not be downloaded; None when
        it may."""
        if size is None:
            return None if self.cap() > 0 else self._over_total()
        if size > self.file_bytes:
            return f"it is {_mb(size)}, over the {_mb(self.file_bytes)} limit per file"
        if self.used + size > self.message_bytes:
            return self._over_total()
        return None

    def _over_total(self) -> str:
        return f"the message's files are over the {_mb(self.message_bytes)} limit per message"

    def take(self, size: int) -> None:
        self.used += size

    @staticmethod
    def skipped(name: str, reason: str) -> SkippedFile:
        return SkippedFile(name=name or "file", reason=reason)


class BasePlatformAdapter(abc.ABC):
    """One platform connection.

    `start(ctx)` connects and then runs until `ctx.stop_event` is set or the transport fails
    (raise `AdapterError`, or `AdapterAuthError` for refused credentials); it calls
    `ctx.connected()` once ready. `stop()` is idempotent. `send` and the optional methods
    return a `SendResult` and must not raise for platform errors.
    """

    name: str = "base"
    capabilities: Capabilities = Capabilities()
    #: The validated `platforms.<name>` block (the adapter's own model).
    settings: PlatformSettings = PlatformSettings()
    #: How replies render on this platform, for the system prompt ("" = nothing to add).
    format_hint: str = ""
    #: Who the bot is; set by the adapter once connected (None before, or for a platform
    #: without a bot account).
    identity: Identity | None = None

    @property
    def bot_username(self) -> str | None:
        """The bot's @name once connected (commands addressed to other bots are not ours)."""
        return self.identity.username if self.identity is not None else None

    @abc.abstractmethod
    async def start(self, ctx: AdapterContext) -> None: ...

    @abc.abstractmethod
    async def stop(self) -> None: ...

    @abc.abstractmethod
    async def send(self, message: OutboundMessage) -> SendResult: ...

    async def edit(
        self, chat_id: str, message_id: str, text: str, *, formatted: bool = True
    ) -> SendResult:
        return SendResult.failure(ErrorKind.UNKNOWN, "edit not supported")

    async def typing(self, chat_id: str, thread_id: str | None = None) -> SendResult:
        return SendResult.failure(ErrorKind.UNKNOWN, "typing not supported")

    def listening(self) -> tuple[str, int] | None:
        """The address the adapter serves inbound HTTP on once started (the HTTP API, a
        webhook), or None when it serves none. Must not raise."""
        return None

    async def delete(self, chat_id: str, message_id: str) -> SendResult:
        return SendResult.failure(ErrorKind.UNKNOWN, "delete not supported")

    async def send_media(
        self,
        chat_id: str,
        attachment: OutboundAttachment,
        *,
        thread_id: str | None = None,
        caption: str | None = None,
    ) -> SendResult:
        """Send one file; its content is `attachment_bytes(attachment)` (the bytes the
        gateway read and checked), never a fresh read of the path."""
        return SendResult.failure(ErrorKind.UNKNOWN, "media not supported")

    async def turn_complete(  # noqa: B027 - optional hook
        self, chat_id: str, *, reply_to: str | None, ok: bool, error: str | None = None
    ) -> None:
        """Called once the gateway finished answering the event `reply_to` (reply, command
        answer, refusal or error). Request/response transports (the HTTP API) close the
        request here; chat platforms ignore it. Must not raise."""

    def commands_menu(self, commands: list[tuple[str, str]]) -> None:  # noqa: B027 - optional
        """Receive the command registry's (name, help) pairs, e.g. for a bot menu."""

    async def already_delivered(self, ref: DeliveryRef) -> dict[int, str] | None:
        """The parts of a final reply already in the chat (part index -> platform message id),
        found by the `delivery_key` its sends carried; None when the platform cannot tell
        (the default: Telegram keeps nothing to look for). Start-up recovery asks before it
        sends an open outbox row again. Must not raise."""
        return None


@dataclass(frozen=True, slots=True)
class DeliveryRef:
    """An outbox row to look for: its sends carried `delivery_key` "<outbox_id>.<part>"."""

    outbox_id: int
    chat_id: str
    thread_id: str | None
    reply_to: str | None
    since: float  # epoch seconds: the row was recorded then, nothing older can match


S = TypeVar("S", bound=PlatformSettings)


@dataclass(frozen=True, slots=True)
class AdapterSpec(Generic[S]):
    """What an adapter package declares through its `hermes.adapters` entry point.

    `settings` is the model of its `platforms.<name>` block; the module defining it must
    import without the platform SDK (configuration checks and docs read it). `factory` builds
    the adapter from validated settings and is where the SDK gets imported (`lazy_factory`).
    """

    settings: type[S]
    factory: Callable[[str, S], BasePlatformAdapter]

    def create(
        self, name: str, settings: S | Mapping[str, Any] | None = None
    ) -> BasePlatformAdapter:
        """Build the adapter `name` from its settings (a mapping is validated first).

        Raises:
            pydantic.ValidationError: invalid settings.
            ImportError: the platform SDK is not installed.
        """
        return self.factory(name, self.settings.coerce(settings))


async def attachment_bytes(attachment: OutboundAttachment) -> bytes:
    """The content to send for `attachment`: the bytes the gateway read when it checked the
    file (`attachment.data`); the path is read (off the event loop) only for an attachment
    built without them, e.g. by a test. Raises OSError when that read fails."""
    if attachment.data is not None:
        return attachment.data
    import asyncio

    return await asyncio.to_thread(Path(attachment.path).read_bytes)


def lazy_factory(target: str) -> Callable[[str, Any], BasePlatformAdapter]:
    """A factory that imports `target` ("package.module:AdapterClass") when first called and
    builds the adapter with it, so that declaring an `AdapterSpec` imports no platform SDK.

    The factory raises `ImportError` when the module (or its SDK) is missing and `TypeError`
    when `target` does not build a `BasePlatformAdapter`.
    """
    module, _, attr = target.partition(":")

    def factory(name: str, settings: Any) -> BasePlatformAdapter:
        adapter = getattr(importlib.import_module(module), attr)(name, settings)
        if not isinstance(adapter, BasePlatformAdapter):
            raise TypeError(f"{target} built {type(adapter).__name__}, not a BasePlatformAdapter")
        return adapter

    return factory
