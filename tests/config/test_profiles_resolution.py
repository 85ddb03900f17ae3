"""Profile resolution order, names, isolation and file modes (in-process)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from gateway.config.load import load_config
from gateway.paths import paths
from gateway.profiles import (
    InvalidProfileName,
    ProfileExists,
    ProfileNotFound,
    create_profile,
    resolve_home,
    use_profile,
    validate_name,
)


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.mark.parametrize("bad", ["../x", "A", "", "a/b", "-lead", "x" * 33, "a b", "é", ".."])
def test_invalid_names_refused(home_dir: Path, bad: str) -> None:
    with pytest.raises(InvalidProfileName):
        validate_name(bad)
    with pytest.raises(InvalidProfileName):
        create_profile(bad)
    with pytest.raises(InvalidProfileName):
        resolve_home(bad, environ={})
    assert not (home_dir / ".hermes" / "profiles").exists() or not any(
        (home_dir / ".hermes" / "profiles").iterdir()
    )


@pytest.mark.parametrize("good", ["a", "work", "team-2", "x_y", "0", "z" * 32])
def test_valid_names(good: str) -> None:
    assert validate_name(good) == good


def test_resolution_order(home_dir: Path, tmp_path: Path) -> None:
    root = home_dir / ".hermes"
    custom = tmp_path / "custom-home"
    create_profile("flagged")
    create_profile("sticky")

    r = resolve_home(None, environ={})
    assert (r.home, r.source, r.name) == (root, "default", "default")

    use_profile("sticky")
    r = resolve_home(None, environ={})
    assert (r.home, r.source, r.name) == (root / "profiles" / "sticky", "sticky", "sticky")

    r = resolve_home(None, environ={"HERMES_HOME": str(custom)})
    assert (r.home, r.source, r.name) == (custom.resolve(), "env", None)

    r = resolve_home("flagged", environ={"HERMES_HOME": str(custom)})
    assert (r.home, r.source, r.name) == (root / "profiles" / "flagged", "flag", "flagged")

    r = resolve_home("default", environ={"HERMES_HOME": str(custom)})
    assert r.home == root

    use_profile("default")
    assert not (root / "active_profile").exists()
    assert resolve_home(None, environ={}).source == "default"


def test_missing_flag_profile_is_an_error_missing_sticky_falls_back(home_dir: Path) -> None:
    with pytest.raises(ProfileNotFound):
        resolve_home("ghost", environ={})
    (home_dir / ".hermes").mkdir()
    (home_dir / ".hermes" / "active_profile").write_text("ghost\n")
    r = resolve_home(None, environ={})
    assert r.home == home_dir / ".hermes"
    assert r.warning and "ghost" in r.warning


def test_create_refuses_existing_and_default(home_dir: Path) -> None:
    create_profile("one")
    with pytest.raises(ProfileExists):
        create_profile("one")
    with pytest.raises(ProfileExists):
        create_profile("default")


def test_file_modes(home_dir: Path) -> None:
    home = create_profile("modes")
    p = paths(home)
    for d in (home_dir / ".hermes", home_dir / ".hermes" / "profiles", home, p.memories,
              p.cache, p.workspace, p.logs, p.run_dir):
        assert _mode(d) == 0o700, d
    assert _mode(p.env_file) == 0o600
    assert _mode(p.config_file) == 0o600


def test_clone_copies_config_env_soul_memories_only(home_dir: Path) -> None:
    src = create_profile("src")
    sp = paths(src)
    sp.config_file.write_text("gateway:\n  busy_mode: queue\n")
    sp.env_file.write_text("TOKEN_X=abc\n")
    sp.soul.write_text("I am src.")
    (sp.memories / "MEMORY.md").write_text("remember this")
    sp.state_db.write_bytes(b"sqlite")
    (sp.logs / "gateway.log").write_text("log")
    (sp.cache / "file.bin").write_text("cached")
    (sp.root / "sessions").mkdir()
    dst = create_profile("dst", clone_from=src)
    dp = paths(dst)
    assert dp.config_file.read_text() == sp.config_file.read_text()
    assert dp.env_file.read_text() == "TOKEN_X=abc\n"
    assert _mode(dp.env_file) == 0o600
    assert dp.soul.read_text() == "I am src."
    assert (dp.memories / "MEMORY.md").read_text() == "remember this"
    assert not dp.state_db.exists()
    assert not (dp.logs / "gateway.log").exists()
    assert not (dp.cache / "file.bin").exists()
    assert not (dp.root / "sessions").exists()


def test_two_profiles_same_config_are_isolated(home_dir: Path) -> None:
    config = (
        "platforms:\n  telegram:\n    enabled: true\n    token: ${TELEGRAM_BOT_TOKEN}\n"
    )
    homes = {}
    for name, token in (("alpha", "111111:" + "a" * 35), ("beta", "222222:" + "b" * 35)):
        h = create_profile(name)
        paths(h).config_file.write_text(config)
        paths(h).env_file.write_text(f"TELEGRAM_BOT_TOKEN={token}\n")
        homes[name] = (h, token)
    loaded = {n: load_config(h, environ={}) for n, (h, _) in homes.items()}
    for name, (h, token) in homes.items():
        tg = loaded[name].config.platforms["telegram"].token
        assert tg is not None and tg.get_secret_value() == token
        assert paths(h).state_db.parent == h
    assert paths(homes["alpha"][0]).state_db != paths(homes["beta"][0]).state_db
    assert paths(homes["alpha"][0]).env_file != paths(homes["beta"][0]).env_file
