"""The inbound middleware chain: order, stopping, and no reference cycles per event."""

from __future__ import annotations

import gc

from gateway.events import MessageEvent, UserRef
from gateway.pipeline import Inbound, Next, Pipeline
from gateway.ports import Capabilities


def _item(n: int) -> Inbound:
    return Inbound(event=MessageEvent(platform="fake", event_id=f"e{n}", chat_id="c1",
                                      user=UserRef(id="u1"), text=f"message {n}"),
                   capabilities=Capabilities())


async def test_steps_run_in_order_and_a_step_that_does_not_call_next_ends_the_chain() -> None:
    seen: list[str] = []

    async def first(item: Inbound, nxt: Next) -> None:
        seen.append("first")
        await nxt()
        seen.append("first after")

    async def stop(item: Inbound, nxt: Next) -> None:
        seen.append("stop")
        item.drop("stopped")

    async def never(item: Inbound, nxt: Next) -> None:
        seen.append("never")

    item = await Pipeline([first, stop, never]).run(_item(1))
    assert seen == ["first", "stop", "first after"] and item.dropped == "stopped"


async def test_a_run_leaves_no_reference_cycle_for_the_collector() -> None:
    """Every event goes through the chain: a cycle per run (the chain's closure naming
    itself held the event) was all the cyclic garbage a busy gateway made, and the full
    collections that walk it stall the event loop."""

    async def passing(item: Inbound, nxt: Next) -> None:
        item.notes.setdefault("steps", set()).add("passing")
        await nxt()

    async def last(item: Inbound, nxt: Next) -> None:
        item.notes["done"] = True

    pipeline = Pipeline([passing, passing, last])
    gc.collect()
    gc.disable()
    try:
        for n in range(50):
            assert (await pipeline.run(_item(n))).notes["done"]
        unreachable = gc.collect()
    finally:
        gc.enable()
    assert unreachable == 0
