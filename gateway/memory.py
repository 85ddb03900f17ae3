"""The gateway's side of the external memory provider (`memory.provider`): whose memory each
call is about, and when the session hooks run.

* A turn recalls and syncs for the user who spoke (`<platform>:<user id>`), in direct chats,
  and in groups only with `memory.in_groups`.
* Before a compaction, the provider's text for the summary is asked for direct-chat sessions
  only (a group's summary is read by everybody in it).
* A compaction that rotates a session into its child tells the provider the child's id; a
  session ended by `/new`, a reset, `/branch` or `/resume` tells it the session ended.

`build_memory` loads the provider through its entry point; nothing is opened before
`start()`, which the runner awaits once at start-up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import structlog
from pydantic import ValidationError

from agent_core.memory import (
    MemoryManager,
    MemoryProviderError,
    MemorySettings,
    TurnMemory,
    UserScope,
    load_provider,
)
from gateway.config.models import HermesConfig
from gateway.events import Principal
from storage.types import Session

__all__ = ["GatewayMemory", "MemoryLoadError", "build_memory"]

log = structlog.get_logger("gateway.memory")


class MemoryLoadError(Exception):
    """The configured provider cannot be built (a configuration error: exit 78)."""


def _principal(platform: str, user_id: str) -> str:
    return f"{platform}:{user_id}"


class GatewayMemory:
    """The one external provider of a gateway process, behind the gateway's rules."""

    def __init__(self, manager: MemoryManager, *, in_groups: bool = False) -> None:
        self.manager = manager
        self.in_groups = in_groups

    @property
    def name(self) -> str:
        return self.manager.name

    async def start(self) -> None:
        await self.manager.start()

    async def aclose(self) -> None:
        await self.manager.aclose()

    def for_turn(self, session: Session, principal: Principal) -> TurnMemory | None:
        """The provider bound to the user who spoke, or None where it does not serve."""
        if not principal.user_id or not self._serves(session):
            return None
        return self.manager.for_turn(
            UserScope(_principal(principal.platform, principal.user_id), session.id))

    async def pre_compress(self, session: Session, messages: Sequence[dict[str, Any]]) -> str:
        """The provider's text for the summary of `session` ("" for a group session)."""
        if session.chat_type != "dm" or not session.user_id:
            return ""
        return await self.manager.pre_compress(messages, self._owner(session))

    def rotated(self, session: Session, child_id: str) -> None:
        """`session` was compacted into `child_id`."""
        if self._serves(session) and session.user_id:
            self.manager.session_switch(self._owner(session), child_id, "compression")

    def ended(self, session: Session, reason: str) -> None:
        if self._serves(session) and session.user_id:
            self.manager.session_end(self._owner(session), reason)

    def _serves(self, session: Session) -> bool:
        return session.chat_type == "dm" or self.in_groups

    @staticmethod
    def _owner(session: Session) -> UserScope:
        return UserScope(_principal(session.source, session.user_id or ""), session.id)


def build_memory(config: HermesConfig) -> GatewayMemory | None:
    """The external provider of `memory.provider` (None when unset). Raises
    `MemoryLoadError` when it cannot be built; `config.problems()` reports the same earlier."""
    m = config.memory
    name = m.provider_name()
    if name is None:
        return None
    if len(m.provider_names()) > 1:
        raise MemoryLoadError("memory.provider: at most one external memory provider")
    try:
        provider = load_provider(name, m.provider_settings())
    except MemoryProviderError as exc:
        raise MemoryLoadError(f"memory.provider: {exc}") from None
    except ValidationError:  # its text may quote a value: name the block only
        raise MemoryLoadError(f"memory.providers.{name}: invalid settings (hermes config "
                              "check names the keys)") from None
    settings = MemorySettings(
        recall_timeout_s=m.recall_timeout_s, sync_timeout_s=m.sync_timeout_s,
        hook_timeout_s=m.hook_timeout_s, sync_queue_size=m.sync_queue_size,
        recall_max_chars=m.recall_max_chars)
    log.info("memory_provider_loaded", provider=name, in_groups=m.in_groups)
    return GatewayMemory(MemoryManager(provider, settings), in_groups=m.in_groups)
