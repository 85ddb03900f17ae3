"""Open the store the config names (`storage.backend`, `storage.dsn`): the one place the
gateway and the CLI turn the config into a store."""

from __future__ import annotations

from pathlib import Path

from gateway.config.models import HermesConfig
from storage.opening import AnyStore, describe_target, open_store

__all__ = ["open_configured_store", "store_target"]


async def open_configured_store(config: HermesConfig, state_db: Path) -> AnyStore:
    """The configured backend's store, created and migrated. SQLite uses `state_db`."""
    return await open_store(config.storage.backend, path=state_db,
                            dsn=config.storage.dsn_value())


def store_target(config: HermesConfig, state_db: Path) -> str:
    """Where the store lives, printable (no password)."""
    return describe_target(config.storage.backend, path=state_db,
                           dsn=config.storage.dsn_value())
