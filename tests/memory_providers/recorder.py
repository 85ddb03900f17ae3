"""A third-party style memory provider for tests: it records every call and keeps memories
per principal in memory. Tests install it as a plugin (`install_plugin`): a distribution on
`sys.path` whose entry point `recorder` in `hermes.memory_providers` names this class, so it
is found and loaded exactly as a provider from PyPI would be."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from agent_core.memory import MemoryProvider, ProviderSettings, UserScope

__all__ = ["RecorderSettings", "RecordingProvider", "install_plugin"]

_DIST = "hermes_test_recorder-0.1.dist-info"


def install_plugin(root: Path) -> Path:
    """Write the plugin's distribution metadata under `root` (put `root` on `sys.path`, or
    on PYTHONPATH of a subprocess, with the repository beside it) and return `root`."""
    dist = root / _DIST
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hermes-test-recorder\n"
                                   "Version: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(
        "[hermes.memory_providers]\n"
        "recorder = tests.memory_providers.recorder:RecordingProvider\n", encoding="utf-8")
    return root


class RecorderSettings(ProviderSettings):
    recall_delay_s: float = Field(default=0.0, ge=0)
    prefix: str = "remembered"


class RecordingProvider(MemoryProvider):
    name: ClassVar[str] = "recorder"
    settings_model: ClassVar[type[ProviderSettings]] = RecorderSettings

    def __init__(self, settings: ProviderSettings) -> None:
        assert isinstance(settings, RecorderSettings)
        super().__init__(settings)
        self.config = settings
        self.calls: list[tuple[str, Any]] = []
        self.memories: dict[str, list[str]] = {}

    async def start(self) -> None:
        self.calls.append(("start", None))

    async def aclose(self) -> None:
        self.calls.append(("close", None))

    async def recall(self, query: str, scope: UserScope) -> Sequence[str]:
        self.calls.append(("recall", (query, scope)))
        if self.config.recall_delay_s:
            await asyncio.sleep(self.config.recall_delay_s)
        return [f"{self.config.prefix}: {m}" for m in self.memories.get(scope.principal, [])]

    async def sync_turn(self, user: str, assistant: str, scope: UserScope) -> None:
        self.calls.append(("sync", (user, assistant, scope)))
        self.memories.setdefault(scope.principal, []).append(user)

    async def on_pre_compress(self, messages: Sequence[dict[str, Any]], scope: UserScope) -> str:
        self.calls.append(("pre_compress", (len(messages), scope)))
        return f"{scope.principal} asked {len(self.memories.get(scope.principal, []))} things"

    async def on_session_switch(self, scope: UserScope, new_session_id: str,
                                reason: str) -> None:
        self.calls.append(("switch", (scope, new_session_id, reason)))

    async def on_session_end(self, scope: UserScope, reason: str) -> None:
        self.calls.append(("end", (scope, reason)))

    def of(self, kind: str) -> list[Any]:
        return [args for k, args in self.calls if k == kind]
