"""The daemon's heap settling (`gateway.process`): every collection freezes its survivors,
so the next one walks only what is new; the hourly resettle reclaims cycles among the
frozen."""

from __future__ import annotations

import gc
import weakref

from gateway.process import YOUNG_THRESHOLD, resettle_heap, settle_heap, unsettle_heap


class Node:
    other: Node | None = None


def _cycle() -> tuple[Node, Node]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a, b


def test_survivors_of_a_full_collection_are_frozen_until_the_hourly_resettle() -> None:
    settle_heap()
    try:
        a, b = _cycle()
        gone = weakref.ref(a)
        gc.collect()  # a full collection: the pair survives it and is frozen with the rest
        assert not any(o is a for o in gc.get_objects())  # the collector no longer walks it
        del a, b
        gc.collect()
        assert gone() is not None  # frozen cyclic garbage waits for the resettle ...
        pause_ms = resettle_heap()
        assert pause_ms is not None and pause_ms >= 0
        assert gone() is None  # ... which reclaims it
        assert gc.get_freeze_count() > 0  # and freezes the survivors again
    finally:
        unsettle_heap()


def test_settling_walks_nothing_and_start_up_garbage_waits_for_the_first_resettle() -> None:
    unsettle_heap()
    a, b = _cycle()  # garbage start-up left behind, and a live object of start-up
    gone = weakref.ref(a)
    kept = Node()
    del a, b
    walks: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            walks.append(info["generation"])

    gc.callbacks.append(count)
    try:
        settle_heap()
        assert walks == []  # no collection at ready: it stalled the loop for 40-60 ms
    finally:
        gc.callbacks.remove(count)
    try:
        assert not any(o is kept for o in gc.get_objects())  # frozen: never walked again
        gc.collect()
        assert gone() is not None  # frozen garbage waits ...
        resettle_heap()
        assert gone() is None  # ... for the hourly resettle
    finally:
        unsettle_heap()


def test_without_settling_nothing_is_frozen_and_there_is_nothing_to_resettle() -> None:
    unsettle_heap()
    assert gc.get_freeze_count() == 0
    a, b = _cycle()
    gone = weakref.ref(a)
    del a, b
    gc.collect()
    assert gone() is None
    assert gc.get_freeze_count() == 0
    assert resettle_heap() is None


def test_a_cycle_that_dies_young_is_collected_and_one_that_lived_through_a_collection_waits(
) -> None:
    settle_heap()
    try:
        a, b = _cycle()
        young = weakref.ref(a)
        del a, b
        gc.collect(0)  # a young collection: what died is reclaimed
        assert young() is None
        c, d = _cycle()
        old = weakref.ref(c)
        gc.collect(0)  # it lived through this one: frozen, no collection walks it again
        assert not any(o is c for o in gc.get_objects())
        del c, d
        gc.collect(1)
        gc.collect()
        assert old() is not None  # left to refcounting, which cannot free a cycle ...
        resettle_heap()
        assert old() is None  # ... until the hourly resettle
    finally:
        unsettle_heap()


def test_settling_collects_the_young_generation_less_often_and_unsettling_restores_it() -> None:
    before = gc.get_threshold()
    settle_heap()
    try:
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 1, before[2])
        settle_heap()  # twice: still restorable to what it was before the first
    finally:
        unsettle_heap()
    assert gc.get_threshold() == before


def test_start_up_pauses_the_collector_and_the_ready_gateway_resumes_it() -> None:
    from hermes_common.lean import pause_collector, resume_collector

    assert gc.isenabled()
    pause_collector()
    try:
        assert not gc.isenabled()  # the imports of `hermes gateway run`
        settle_heap()  # ready
        assert gc.isenabled()
    finally:
        resume_collector()
        unsettle_heap()
    assert gc.isenabled()


def test_a_collector_turned_off_by_someone_else_stays_off() -> None:
    from hermes_common.lean import pause_collector, resume_collector

    gc.disable()
    try:
        pause_collector()
        resume_collector()
        assert not gc.isenabled()
    finally:
        gc.enable()
