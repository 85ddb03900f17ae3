"""Adapter discovery through the `hermes.adapters` entry points (each an `AdapterSpec`) and
explicit registration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.fake import FakeAdapter, FakeSettings
from gateway import registry
from gateway.ports import AdapterSpec


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
        "fake_ep = adapters.fake:SPEC\n"
        "broken_ep = hermes_module_that_does_not_exist:SPEC\n"
        "not_a_spec = adapters.fake:FakeAdapter\n"
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
        registry.adapter_spec("telegarm")
    message = str(info.value)
    assert "telegarm" in message and "fake_ep" in message
    assert "did you mean 'telegram'?" in message


def test_missing_module_is_a_clear_load_error(entry_point_dir: Path) -> None:
    with pytest.raises(registry.AdapterLoadError, match="broken_ep"):
        registry.adapter_spec("broken_ep")


def test_an_entry_point_must_name_a_spec(entry_point_dir: Path) -> None:
    with pytest.raises(registry.AdapterLoadError, match="not an AdapterSpec"):
        registry.adapter_spec("not_a_spec")


def test_a_plugin_spec_validates_its_own_block(entry_point_dir: Path) -> None:
    from gateway.config.errors import ConfigError
    from gateway.config.load import parse_config

    cfg = parse_config({"platforms": {"fake_ep": {"enabled": True, "max_length": 99}}}, env={})[0]
    assert isinstance(cfg.platforms["fake_ep"], FakeSettings)
    assert cfg.platforms["fake_ep"].max_length == 99
    with pytest.raises(ConfigError, match=r"platforms\.fake_ep\.max_lenght: unknown key"):
        parse_config({"platforms": {"fake_ep": {"max_lenght": 99}}}, env={})


def test_explicit_registration_wins_and_can_be_removed(entry_point_dir: Path) -> None:
    made: list[str] = []

    def factory(name: str, settings: FakeSettings) -> FakeAdapter:
        made.append(name)
        return FakeAdapter(name, edit=False)

    registry.register("fake_ep", AdapterSpec(FakeSettings, factory))
    try:
        assert registry.create_adapter("fake_ep").capabilities.edit is False
        assert made == ["fake_ep"]
    finally:
        registry.unregister("fake_ep")
    assert registry.create_adapter("fake_ep").capabilities.edit is True


def test_factory_must_return_an_adapter() -> None:
    def factory(name: str, settings: FakeSettings) -> Any:
        return object()

    registry.register("not_an_adapter", AdapterSpec(FakeSettings, factory))
    try:
        with pytest.raises(TypeError, match="not a BasePlatformAdapter"):
            registry.create_adapter("not_an_adapter")
    finally:
        registry.unregister("not_an_adapter")


def test_shipped_fake_adapter_is_discoverable_by_name() -> None:
    adapter = registry.create_adapter("fake", {"max_length": 100})
    assert isinstance(adapter, FakeAdapter)
    assert adapter.capabilities.max_length == 100


def test_register_refuses_a_bare_factory() -> None:
    with pytest.raises(TypeError, match="AdapterSpec"):
        registry.register("bare", FakeAdapter)  # type: ignore[arg-type]  # the error under test
