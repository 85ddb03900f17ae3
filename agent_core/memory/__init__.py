"""The agent's memory: the built-in `MEMORY.md`/`USER.md` store (always on) and at most one
external `MemoryProvider` (recall before a turn, sync after it, hooks at compression and at the
end of a session), loaded from the entry point group `hermes.memory_providers`.

    store.py     MemoryStore: the two Markdown files, their limits, locks and the threat scan
    provider.py  MemoryProvider (the interface a provider implements), UserScope, its settings
    fence.py     recalled text → the fenced, scanned `<memory-context>` block
    manager.py   MemoryManager: timeouts, the background sync queue, failures isolated
    loading.py   the entry point group and `load_provider`
"""

from agent_core.memory.fence import FENCE_CLOSE, FENCE_NOTE, FENCE_OPEN, fence_recall, strip_fences
from agent_core.memory.loading import (
    ENTRY_POINT_GROUP,
    MemoryProviderError,
    available_providers,
    load_provider,
    provider_class,
)
from agent_core.memory.manager import MemoryManager, MemorySettings, TurnMemory
from agent_core.memory.provider import MemoryProvider, ProviderSettings, UserScope
from agent_core.memory.store import (
    ENTRY_DELIMITER,
    MEMORY_CHAR_LIMIT,
    USER_CHAR_LIMIT,
    MemoryResult,
    MemoryStore,
    MemoryTarget,
)

__all__ = [
    "ENTRY_DELIMITER",
    "ENTRY_POINT_GROUP",
    "FENCE_CLOSE",
    "FENCE_NOTE",
    "FENCE_OPEN",
    "MEMORY_CHAR_LIMIT",
    "USER_CHAR_LIMIT",
    "MemoryManager",
    "MemoryProvider",
    "MemoryProviderError",
    "MemoryResult",
    "MemorySettings",
    "MemoryStore",
    "MemoryTarget",
    "ProviderSettings",
    "TurnMemory",
    "UserScope",
    "available_providers",
    "fence_recall",
    "load_provider",
    "provider_class",
    "strip_fences",
]
