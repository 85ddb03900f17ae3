"""MEDIA: directives and the allow-list deciding which files may leave the machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_common.text import MediaPolicy, MediaRef, extract_media


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    root = tmp_path / "home" / ".hermes"
    (root / "cache").mkdir(parents=True)
    (root / "workspace").mkdir()
    (root / ".env").write_text("TOKEN=secret\n")
    (root / "state.db").write_bytes(b"")
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def policy(profile: Path, home: Path) -> MediaPolicy:
    return MediaPolicy.for_profile(profile, home=home)


def test_allowed_file_in_cache_is_extracted_and_allowed(profile: Path, policy: MediaPolicy) -> None:
    chart = profile / "cache" / "chart.png"
    chart.write_bytes(b"\x89PNG")
    text = f"Here is the chart:\nMEDIA:{chart}\nEnjoy."
    clean, refs = extract_media(text)
    assert clean == "Here is the chart:\nEnjoy."
    assert refs == [MediaRef(str(chart))]
    assert refs[0].kind == "image"
    decision = policy.check(refs[0].path)
    assert decision.allowed
    assert decision.path == chart.resolve()


def test_ssh_key_is_refused_with_reason(home: Path, policy: MediaPolicy) -> None:
    key = home / ".ssh" / "id_rsa"
    key.parent.mkdir(parents=True)
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----")
    clean, refs = extract_media("MEDIA:~/.ssh/id_rsa")
    assert clean == ""
    decision = policy.check(refs[0].path)
    assert not decision.allowed
    assert decision.reason == "credential file"
    assert "id_rsa" in decision.note() and "credential" in decision.note()


def test_credentials_refused_even_inside_allowed_dirs(profile: Path, home: Path) -> None:
    ws = profile / "workspace"
    for name in (".env", "id_ed25519.pub", "id_rsa_backup"):
        (ws / name).write_text("x")
    policy = MediaPolicy.for_profile(profile, extra_dirs=[home], home=home)
    for name in (".env", "id_ed25519.pub", "id_rsa_backup"):
        assert not policy.check(str(ws / name)).allowed, name
    (home / ".aws").mkdir()
    (home / ".aws" / "config").write_text("[default]")
    refused = policy.check(str(home / ".aws" / "config"))
    assert not refused.allowed
    assert "protected" in refused.reason
    assert not policy.check(str(profile / "state.db")).allowed


def test_directive_inside_code_block_is_left_alone(profile: Path) -> None:
    text = "Tool output:\n```\nMEDIA:/tmp/old.png\n```\nand\n> MEDIA:/tmp/quoted.png"
    clean, refs = extract_media(text)
    assert refs == []
    assert clean == text


def test_symlink_from_workspace_to_etc_passwd_is_refused(
    profile: Path, policy: MediaPolicy
) -> None:
    link = profile / "workspace" / "innocent.txt"
    os.symlink("/etc/passwd", link)
    decision = policy.check(str(link))
    assert not decision.allowed
    assert decision.path == Path("/etc/passwd").resolve()
    assert "protected" in decision.reason


def test_symlink_out_of_allowed_dirs_is_refused(
    tmp_path: Path, profile: Path, policy: MediaPolicy
) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("x")
    link = profile / "cache" / "link.txt"
    os.symlink(outside, link)
    assert policy.check(str(link)).reason == "outside the allowed media folders"


def test_system_paths_missing_and_relative_refused(profile: Path, policy: MediaPolicy) -> None:
    assert not policy.check("/etc/hostname").allowed
    assert not policy.check("/proc/self/environ").allowed
    assert policy.check(str(profile / "cache" / "nope.png")).reason == "no such file"
    assert policy.check("cache/x.png").reason == "not an absolute path"
    assert not policy.check(str(profile / "cache" / ".." / ".env")).allowed


def test_profile_under_a_denied_dir_still_works(tmp_path: Path) -> None:
    root = tmp_path / "root" / ".hermes"
    (root / "cache").mkdir(parents=True)
    f = root / "cache" / "a.txt"
    f.write_text("x")
    policy = MediaPolicy(
        [root / "cache"], denied_dirs=[tmp_path / "root"], home=tmp_path / "root"
    )
    assert policy.check(str(f)).allowed
    (tmp_path / "root" / "b.txt").write_text("x")
    assert not policy.check(str(tmp_path / "root" / "b.txt")).allowed


def test_modifiers_per_line_and_global(profile: Path) -> None:
    text = (
        "Files:\nMEDIA:/w/report.pdf [[as_document]]\nMEDIA:`/w/note.ogg`\n"
        "[[audio_as_voice]]\nMEDIA: /w/photo.jpg\nMEDIA:relative.png"
    )
    clean, refs = extract_media(text)
    assert clean == "Files:\nMEDIA:relative.png"
    assert refs == [
        MediaRef("/w/report.pdf", as_document=True, as_voice=True),
        MediaRef("/w/note.ogg", as_document=False, as_voice=True),
        MediaRef("/w/photo.jpg", as_document=False, as_voice=True),
    ]
    assert [r.kind for r in refs] == ["document", "audio", "image"]


def test_text_without_directives_is_unchanged() -> None:
    text = "No media here.\n\n\nJust MEDIA: talk and a path /etc/passwd."
    assert extract_media(text) == (text, [])


async def test_acheck_runs_off_loop(profile: Path, policy: MediaPolicy) -> None:
    f = profile / "workspace" / "out.csv"
    f.write_text("a,b\n")
    decision = await policy.acheck(str(f))
    assert decision.allowed
