"""Both backends (`StateStore`, `PostgresStore`) implement every storage port with the very signature the port declares.

The type checker proves assignability (storage/store.py); this test also catches drift the
checker tolerates: a renamed keyword, a changed default, a port method with no
implementation at all, or a port that nothing checks.
"""

from __future__ import annotations

import inspect
from typing import Protocol

import pytest

from storage import StateStore, ports, replica_ports
from storage.postgres import PostgresStore

PORTS = [getattr(ports, name) for name in ports.__all__]
#: Where ports are declared (`storage.ports` re-exports those of the others).
PORT_MODULES = {ports.__name__, replica_ports.__name__}
STORES = [StateStore, PostgresStore]


def _methods(proto: type) -> list[str]:
    """The port's methods, those of the ports it combines included."""
    own = [klass for klass in proto.__mro__ if klass.__module__ in PORT_MODULES]
    return sorted({n for klass in own for n, v in vars(klass).items()
                   if not n.startswith("_") and inspect.isfunction(v)})


def test_every_name_exported_is_a_protocol_with_methods() -> None:
    assert PORTS, "storage.ports exports no port"
    for proto in PORTS:
        assert Protocol in proto.__mro__ or getattr(proto, "_is_protocol", False), proto
        assert _methods(proto), f"{proto.__name__} declares no method"


@pytest.mark.parametrize("store_cls", STORES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("proto", PORTS, ids=lambda p: p.__name__)
def test_store_matches_the_port(proto: type, store_cls: type) -> None:
    for name in _methods(proto):
        impl = getattr(store_cls, name, None)
        assert impl is not None, f"{store_cls.__name__} lacks {proto.__name__}.{name}"
        want = inspect.signature(getattr(proto, name), eval_str=True)
        got = inspect.signature(impl, eval_str=True)
        assert list(want.parameters) == list(got.parameters), (proto.__name__, name)
        for pname, wp in want.parameters.items():
            gp = got.parameters[pname]
            assert wp.kind == gp.kind, (proto.__name__, name, pname)
            assert wp.annotation == gp.annotation, (proto.__name__, name, pname)
            if wp.default is not Ellipsis:  # `...` in a port: "has a default", any value
                assert wp.default == gp.default, (proto.__name__, name, pname)
            else:
                assert gp.default is not inspect.Parameter.empty, (proto.__name__, name, pname)
        assert want.return_annotation == got.return_annotation, (proto.__name__, name)
        assert inspect.iscoroutinefunction(getattr(proto, name)) == \
            inspect.iscoroutinefunction(impl), (proto.__name__, name)


@pytest.mark.parametrize("store_cls", STORES, ids=lambda c: c.__name__)
def test_every_public_method_used_above_storage_is_on_a_port(store_cls: type) -> None:
    """A method of the store is either on a port or deliberately off them (listed here)."""
    on_ports = {m for p in PORTS for m in _methods(p)}
    off_ports = {"open", "find_by_platform_message_id", "set_platform_message_id",
                 "write_stats"}
    public = {n for n in dir(store_cls) if not n.startswith("_")} - {"path", "dsn"}
    assert public - on_ports - off_ports == set()
