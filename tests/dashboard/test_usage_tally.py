"""The overview's token chart = the store's usage per day (re-read every 10 s) + what the
turn layer's tally gained since that read: current after every write, never counted twice;
the stored count is read on every page. A real store and a real `DashboardServer`; the
writes are made the way the turn layer makes them (store first, then the tally)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from gateway.dashboard import DashboardServer, DashboardSources
from gateway.usage_tally import UsageTally
from storage import StateStore


async def test_the_overview_adds_the_tally_between_reads_of_the_store(tmp_path: Path) -> None:
    store = await StateStore.open(tmp_path / "state.db")
    tally = UsageTally()
    noon = dt.datetime.combine(dt.datetime.now(dt.UTC).date(), dt.time(12), dt.UTC)
    now = [noon.timestamp()]  # the dashboard's clock: no day boundary during the test

    async def sessions() -> dict[str, Any]:
        return {"active": 0, "queues": 0, "queued": 0, "held": 0}

    server = DashboardServer(DashboardSources(
        store=store, adapters=list, sessions=sessions, compression=lambda: {"enabled": False},
        tally=tally.snapshot), clock=lambda: now[0])

    async def turn(session_id: str, started_at: float, tin: int, tout: int) -> None:
        await store.add_usage(session_id, input_tokens=tin, output_tokens=tout)
        tally.usage_recorded(started_at, tin, tout)

    async def shown() -> tuple[int, tuple[int, int], tuple[int, int]]:
        data = await server.overview_data()
        today, yesterday = data["bars"][-1], data["bars"][-2]
        return (data["total_sessions"], (today.input_tokens, today.output_tokens),
                (yesterday.input_tokens, yesterday.output_tokens))

    try:
        old = await store.create_session(source="fake", session_key="k0",
                                         started_at=now[0] - 86400)
        await turn(old.id, old.started_at, 50, 5)
        assert await shown() == (1, (0, 0), (50, 5))            # read from the store

        new = await store.create_session(source="fake", session_key="k1", started_at=now[0])
        await turn(new.id, new.started_at, 300, 30)
        await turn(old.id, old.started_at, 7, 1)                # tokens go to its start day
        now[0] += 1
        assert await shown() == (2, (300, 30), (57, 6))         # store read + the tally
        await turn(new.id, new.started_at, 100, 10)
        assert await shown() == (2, (400, 40), (57, 6))

        now[0] += 11                                            # the TTL passed: re-read
        assert await shown() == (2, (400, 40), (57, 6))         # nothing counted twice
        await turn(new.id, new.started_at, 1, 1)
        assert await shown() == (2, (401, 41), (57, 6))
        day = dt.datetime.fromtimestamp(new.started_at, dt.UTC).date().isoformat()
        assert (await server.overview_data())["bars"][-1].day == day
    finally:
        await store.close()
