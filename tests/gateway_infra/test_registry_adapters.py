"""Adapter discovery through the `hermes.adapters` entry points and explicit registration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.fake import FakeAdapter
from gateway import registry


@pytest.fixture
def entry_point_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway distribution on sys.path declaring two `hermes.adapters` entry points."""
    dist = tmp_path / "hermes_test_adapters-0.0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: hermes-test-adapters\nVersion: 0.0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        "[hermes.adapters]\n"
        "fake_ep = adapters.fake:create\n"
        "broken_ep = hermes_module_that_does_not_exist:create\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_entry_point_factory_builds_the_adapter(entry_point_dir: Path) -> None:
    assert {"fake_ep", "broken_ep"} <= set(registry.available_adapters())
    adapter = registry.create_adapter("fake_ep", {"typing": False})
    assert isinstance(adapter, FakeAdapter)
    assert adapter.name == "fake_ep" and adapter.capabilities.typing is False


def test_unknown_name_lists_the_available_ones(entry_point_dir: Path) -> None:
    with pytest.raises(registry.AdapterNotFoundError) as info:
        registry.load_adapter_factory("telegarm")
    message = str(info.value)
    assert "telegarm" in message and "fake_ep" in message


def test_missing_module_is_a_clear_load_error(entry_point_dir: Path) -> None:
    with pytest.raises(registry.AdapterLoadError, match="broken_ep"):
        registry.load_adapter_factory("broken_ep")


def test_explicit_registration_wins_and_can_be_removed(entry_point_dir: Path) -> None:
    made: list[str] = []

    def factory(name: str, settings: object) -> FakeAdapter:
        made.append(name)
        return FakeAdapter(name, edit=False)

    registry.register("fake_ep", factory)
    try:
        assert registry.create_adapter("fake_ep").capabilities.edit is False
        assert made == ["fake_ep"]
    finally:
        registry.unregister("fake_ep")
    assert registry.create_adapter("fake_ep").capabilities.edit is True


def test_factory_must_return_an_adapter() -> None:
    def factory(name: str, settings: object) -> Any:
        return object()

    registry.register("not_an_adapter", factory)
    try:
        with pytest.raises(TypeError, match="not a BasePlatformAdapter"):
            registry.create_adapter("not_an_adapter")
    finally:
        registry.unregister("not_an_adapter")


def test_shipped_fake_adapter_is_discoverable_by_name() -> None:
    adapter = registry.create_adapter("fake", {"max_length": 100})
    assert isinstance(adapter, FakeAdapter)
    assert adapter.capabilities.max_length == 100
