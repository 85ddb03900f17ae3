from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.adapters_contract.harness_discord import DiscordHarness


@pytest.fixture
async def discord_h(tmp_path: Path) -> AsyncIterator[DiscordHarness]:
    """A started Discord adapter connected to a fresh fake Discord."""
    async with DiscordHarness(tmp_path) as h:
        await h.start()
        yield h
