"""Supervision life cycle: named tasks, concurrent start, reverse stop with errors collected."""

from __future__ import annotations

import asyncio
from pathlib import Path

from adapters.fake import FakeAdapter
from gateway.supervisor import AdapterState
from tests.gateway_infra.helpers import RecordingSleep, make_supervisor, until


class _Ordered(FakeAdapter):
    def __init__(self, name: str, log: list[str], *, fail_stop: bool = False) -> None:
        super().__init__(name)
        self._log = log
        self._fail_stop = fail_stop

    async def stop(self) -> None:
        self._log.append(self.name)
        await super().stop()
        if self._fail_stop:
            raise RuntimeError(f"{self.name} refused to stop")


async def test_each_adapter_runs_in_a_named_task(tmp_path: Path) -> None:
    sup = make_supervisor({"alpha": FakeAdapter("alpha"), "beta": FakeAdapter("beta")}, tmp_path)
    async with sup:
        assert await sup.wait_started(5.0)
        names = {t.get_name() for t in asyncio.all_tasks()}
        assert {"adapter:alpha", "adapter:beta"} <= names
    names = {t.get_name() for t in asyncio.all_tasks()}
    assert not {"adapter:alpha", "adapter:beta"} & names


async def test_stop_goes_in_reverse_start_order_and_collects_errors(tmp_path: Path) -> None:
    order: list[str] = []
    a = _Ordered("a", order)
    b = _Ordered("b", order, fail_stop=True)
    c = _Ordered("c", order)
    sup = make_supervisor({"a": a, "b": b, "c": c}, tmp_path)
    await sup.start()
    assert await sup.wait_started(5.0)
    errors = await sup.stop()
    assert order == ["c", "b", "a"]
    assert [(name, str(err)) for name, err in errors] == [("b", "b refused to stop")]
    assert all(st.state is AdapterState.STOPPED for st in sup.snapshot())
    assert not (a.connected or b.connected or c.connected)
    assert await sup.stop() == []


async def test_stop_during_backoff_does_not_restart(tmp_path: Path) -> None:
    fake = FakeAdapter("fake")
    fake.crash_after(0, times=5)
    sup = make_supervisor({"fake": fake}, tmp_path, sleep=RecordingSleep(hold=True))
    await sup.start()
    await until(lambda: sup.status("fake").state is AdapterState.BACKOFF)
    assert sup.status("fake").next_retry_at is not None
    await sup.stop()
    assert fake.starts == 1
    assert sup.status("fake").state is AdapterState.STOPPED


async def test_snapshot_lists_adapters_in_start_order_as_json(tmp_path: Path) -> None:
    sup = make_supervisor({"b": FakeAdapter("b"), "a": FakeAdapter("a")}, tmp_path)
    async with sup:
        assert await sup.wait_started(5.0)
        rows = [st.to_dict() for st in sup.snapshot()]
    assert [r["name"] for r in rows] == ["b", "a"]
    assert all(r["state"] == "connected" and r["connected_since"] for r in rows)
