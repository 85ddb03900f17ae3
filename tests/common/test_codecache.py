"""hermes_common.codecache: the methods `dataclasses` compiles, kept between starts.

A class built from kept code must be the class `dataclasses` builds on its own (same
behaviour, same annotations); the file keeps exactly what the last start used; anything
wrong with it only costs compiling."""

from __future__ import annotations

import dataclasses
import marshal
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_common import codecache
from hermes_common.codecache import (
    DataclassCode,
    file_name,
    finish_dataclass_code,
    use_dataclass_code,
)


@pytest.fixture(autouse=True)
def _uninstalled() -> Iterator[None]:
    yield
    finish_dataclass_code()
    assert "exec" not in vars(dataclasses)


def build(name: str = "Point", *, extra: bool = False) -> type:
    """A frozen, ordered dataclass with defaults, a factory and (optionally) one field more:
    every method kind `dataclasses` writes."""
    fields: list[tuple[str, type] | tuple[str, type, dataclasses.Field[tuple[int, ...]]]] = [
        ("x", int), ("y", str), ("tags", tuple, dataclasses.field(default_factory=tuple))]
    if extra:
        fields.insert(2, ("z", float))
    return dataclasses.make_dataclass(name, fields, frozen=True, order=True)


def behaviour(cls: type) -> tuple[object, ...]:
    z = [2.0] if "z" in cls.__dataclass_fields__ else []
    a, b = cls(1, "a", *z), cls(2, "b", *z)
    try:
        a.x = 5  # type: ignore[attr-defined]
        frozen = False
    except dataclasses.FrozenInstanceError:
        frozen = True
    return (repr(a), a == cls(*dataclasses.astuple(a)), a < b, frozen,
            hash(a) == hash(cls(*dataclasses.astuple(a))), a.tags,  # type: ignore[attr-defined]
            dict(cls.__init__.__annotations__))


def test_a_class_built_from_kept_code_is_the_class_dataclasses_builds(tmp_path: Path) -> None:
    plain = behaviour(build())
    first = use_dataclass_code(tmp_path)
    compiled = behaviour(build())
    assert first.compiled > 0 and first.hits == 0
    finish_dataclass_code()
    assert (tmp_path / file_name()).exists()

    again = use_dataclass_code(tmp_path)
    kept = behaviour(build())
    assert again.hits == first.compiled and again.compiled == 0  # nothing compiled again
    assert plain == compiled == kept
    # the annotations are the types themselves, as without the cache: this module's
    # `from __future__ import annotations` must not leak into the compiled methods
    assert kept[-1]["x"] is int and kept[-1]["return"] is None


def test_a_changed_class_gets_its_own_code(tmp_path: Path) -> None:
    use_dataclass_code(tmp_path)
    build()
    finish_dataclass_code()
    cache = use_dataclass_code(tmp_path)
    cls = build(extra=True)  # one field more: other __init__, __repr__, __eq__, ...
    assert cache.compiled > 0
    assert cls(1, "a", 2.5).z == 2.5  # type: ignore[call-arg, attr-defined]
    assert "z=2.5" in repr(cls(1, "a", 2.5))


def test_the_file_keeps_exactly_what_the_last_start_used(tmp_path: Path) -> None:
    use_dataclass_code(tmp_path)
    build("A")
    build("B", extra=True)
    finish_dataclass_code()
    both = len(codecache._read(tmp_path / file_name()))

    cache = use_dataclass_code(tmp_path)
    build("A")  # B is gone from the code
    assert cache.compiled == 0 and cache.stale()
    finish_dataclass_code()
    assert 0 < len(codecache._read(tmp_path / file_name())) < both

    mtime = (tmp_path / file_name()).stat().st_mtime_ns
    cache = use_dataclass_code(tmp_path)
    build("A")
    assert not cache.stale()
    finish_dataclass_code()  # nothing changed: not written again
    assert (tmp_path / file_name()).stat().st_mtime_ns == mtime


@pytest.mark.parametrize("content", [
    b"", b"garbage", b"\x00" * 64, marshal.dumps(["not", "a", "tuple"]),
    marshal.dumps(((codecache.FORMAT, b"other-magic", marshal.version), {})),  # another Python
    marshal.dumps(((codecache.FORMAT - 1, codecache._tag()[1], marshal.version), {})),  # older
    marshal.dumps((codecache._tag(), {b"k" * 16: "not code"})),
    marshal.dumps((codecache._tag(), {"text key": compile("x = 1", "<s>", "exec")})),
])
def test_a_damaged_or_foreign_file_costs_only_compiling(tmp_path: Path, content: bytes) -> None:
    plain = behaviour(build())
    (tmp_path / file_name()).write_bytes(content)
    cache = use_dataclass_code(tmp_path)
    assert behaviour(build()) == plain
    assert cache.hits == 0 and cache.compiled > 0
    finish_dataclass_code()
    assert codecache._read(tmp_path / file_name())  # rewritten, readable


def test_a_cache_that_cannot_be_written_is_only_a_lost_cache(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        target = tmp_path / "a-file"  # root writes anywhere: a path under a file fails for all
        target.write_text("")
        where = target / "cache"
    else:
        where = tmp_path / "ro"
        where.mkdir(mode=0o500)
    cache = use_dataclass_code(where)
    build()
    assert cache.save() is False
    finish_dataclass_code()  # no exception either


def test_only_source_text_is_looked_up(tmp_path: Path) -> None:
    cache = DataclassCode(tmp_path / file_name())
    ns: dict[str, object] = {}
    cache.exec(compile("y = 2", "<s>", "exec"), {}, ns)  # a code object passes through
    cache.exec("x = 1", {}, ns)
    assert ns == {"y": 2, "x": 1}
    assert cache.compiled == 1 and cache.hits == 0
    cache.exec("x = 1", {}, ns)
    assert cache.hits == 1
