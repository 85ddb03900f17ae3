"""The agent's memory: the built-in `MEMORY.md`/`USER.md` store (always on) and at most one
external `MemoryProvider` (recall before a turn, sync after it, hooks at compression and at the
end of a session), loaded from the entry point group `hermes.memory_providers`.

    store.py     MemoryStore: the two Markdown files, their limits, locks and the threat scan
    provider.py  MemoryProvider (the interface a provider implements), UserScope, its settings
    fence.py     recalled text → the fenced, scanned `<memory-context>` block
    manager.py   MemoryManager: timeouts, the background sync queue, failures isolated
    loading.py   the entry point group and `load_provider`
    providers/   the providers shipped here (supermemory)

The names below are imported on first use, so a caller that needs only the provider interface
or the loader (the config check) does not load the threat scan.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_core.memory.fence import (
        FENCE_CLOSE,
        FENCE_NOTE,
        FENCE_OPEN,
        fence_recall,
        strip_fences,
    )
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

_WHERE = {
    "fence": ("FENCE_CLOSE", "FENCE_NOTE", "FENCE_OPEN", "fence_recall", "strip_fences"),
    "loading": ("ENTRY_POINT_GROUP", "MemoryProviderError", "available_providers",
                "load_provider", "provider_class"),
    "manager": ("MemoryManager", "MemorySettings", "TurnMemory"),
    "provider": ("MemoryProvider", "ProviderSettings", "UserScope"),
    "store": ("ENTRY_DELIMITER", "MEMORY_CHAR_LIMIT", "USER_CHAR_LIMIT", "MemoryResult",
              "MemoryStore", "MemoryTarget"),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

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


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
