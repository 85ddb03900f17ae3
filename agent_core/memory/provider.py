"""`MemoryProvider`: what an external memory service implements to take part in turns.

The built-in memory (`MEMORY.md`/`USER.md`, `agent_core.memory.store`) is always on; one
external provider may be added beside it (`memory.provider: <name>`). The agent and the gateway
never call a provider directly: `MemoryManager` does, with a timeout on every call, syncs on a
background queue, and every failure logged and swallowed. So a provider may raise anything and
may be slow; it only costs its own result.

Every call names whose memory it is about (`UserScope.principal`, "<platform>:<user id>"):
a provider must keep each principal's memories apart (recall for one user never returns
another's) and must not call the network before `start()`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, SecretStr

__all__ = ["Message", "MemoryProvider", "ProviderSettings", "UserScope"]

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class UserScope:
    """Whose memory a call is about, and in which session."""

    principal: str
    """`<platform>:<user id>`: the user who spoke (a turn) or whom the session serves."""
    session_id: str


class ProviderSettings(BaseModel):
    """Base of a provider's settings (the `memory.providers.<name>` block). Strict: an
    unknown key is a configuration error. Use `SecretStr` for keys and tokens (`${VAR}`
    expands from the environment or the profile's `.env`); `secrets()` hands them to the
    log redaction."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def secrets(self) -> list[str]:
        """Every non-empty `SecretStr` value of these settings (top-level fields)."""
        out: list[str] = []
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr) and value.get_secret_value():
                out.append(value.get_secret_value())
        return out


class MemoryProvider(ABC):
    """One external memory service. Subclasses set `name` and `settings_model`, and are built
    with their validated settings (`cls(settings)`); building must not touch the network.

    Contract of every coroutine: it may raise (logged by the manager, the turn goes on) and
    may be cancelled when it takes longer than its timeout; it must not block the event loop
    (a synchronous client runs in `asyncio.to_thread`).
    """

    name: ClassVar[str] = "base"
    settings_model: ClassVar[type[ProviderSettings]] = ProviderSettings

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings

    async def start(self) -> None:
        """Open clients (once, before the first call). A failure is logged; the calls that
        follow are made anyway (and fail on their own if the service is still away)."""
        return None

    async def aclose(self) -> None:
        """Close clients (after the last call). Idempotent."""
        return None

    @abstractmethod
    async def recall(self, query: str, scope: UserScope) -> Sequence[str]:
        """Memories of `scope.principal` relevant to `query` (the user's message), most
        relevant first, each a short self-contained text. Called once per user turn before
        the model is; bounded by `memory.recall_timeout_s`. What it returns is scanned,
        stripped of fence tags, capped, and shown to the model as background only."""

    @abstractmethod
    async def sync_turn(self, user: str, assistant: str, scope: UserScope) -> None:
        """Record one completed turn (the user's message and the final reply) for
        `scope.principal`. Runs in the background after the reply was sent, one call at a
        time; bounded by `memory.sync_timeout_s`."""

    async def on_pre_compress(self, messages: Sequence[Message], scope: UserScope) -> str:
        """Before the session's middle is summarized: text for the summarizer to keep (what
        the provider knows that the summary should not lose). `messages` is the history
        about to be compressed (a copy). Default: nothing."""
        return ""

    async def on_session_switch(self, scope: UserScope, new_session_id: str,
                                reason: str) -> None:
        """The conversation of `scope.session_id` continues as `new_session_id` (reason
        `compression`: a compaction rotated the session into its child)."""
        return None

    async def on_session_end(self, scope: UserScope, reason: str) -> None:
        """`scope.session_id` ended (`new_session`, `session_reset`, `branched`, `switched`)."""
        return None
