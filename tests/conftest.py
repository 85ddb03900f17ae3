"""Suite-wide: the tests run on the event loop the daemon runs on (`gateway.eventloop`:
uvloop unless `HERMES_EVENT_LOOP=asyncio`), so what passes here is what runs in production."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.eventloop import loop_factory


def pytest_asyncio_loop_factories(config: Any, item: Any) -> Mapping[str, Any]:
    return {"loop": loop_factory()}
