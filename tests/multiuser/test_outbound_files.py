"""The second check of an outbound file, when it is read for sending (issue 14): what it
opens is checked by its real path, so a file or folder swapped for a symlink after the
reply was recorded is not sent, and a file that grew past the cap is not read whole."""

from __future__ import annotations

import os
from pathlib import Path

from gateway.delivery.files import OutboundFiles
from gateway.events import OutboundAttachment
from hermes_common.text import MediaRef


def _files(tmp_path: Path, max_bytes: int = 1024) -> tuple[OutboundFiles, Path, Path]:
    chat = tmp_path / "cache" / "chats" / "c1"
    mine = tmp_path / "workspace" / "users" / "u1"
    chat.mkdir(parents=True)
    mine.mkdir(parents=True)

    def roots_for(_platform: str, _chat: str, user: str | None) -> list[Path]:
        return [chat, mine] if user is not None else [chat]

    return OutboundFiles(roots_for, max_bytes=max_bytes, home=tmp_path), chat, mine


def _recorded(files: OutboundFiles, path: Path) -> OutboundAttachment:
    att = files.check(MediaRef(str(path)), "fake", "c1", "u1")
    assert isinstance(att, OutboundAttachment), att
    return att


def test_a_checked_file_is_read_with_its_bytes(tmp_path: Path) -> None:
    files, chat, mine = _files(tmp_path)
    (mine / "a.txt").write_bytes(b"hello")
    att = _recorded(files, mine / "a.txt")
    assert att.root == str(mine.resolve())
    loaded = files.load(att, "fake", "c1")
    assert isinstance(loaded, OutboundAttachment) and loaded.data == b"hello"
    assert "data" not in loaded.model_dump()  # never stored in the outbox


def test_a_folder_swapped_for_a_symlink_after_the_check_is_refused(tmp_path: Path) -> None:
    files, _chat, mine = _files(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_bytes(b"secret")
    sub = mine / "docs"
    sub.mkdir()
    (sub / "a.txt").write_bytes(b"fine")
    att = _recorded(files, sub / "a.txt")
    (sub / "a.txt").unlink()
    sub.rmdir()
    os.symlink(outside, sub)  # the folder now leads out; the file name is unchanged
    loaded = files.load(att, "fake", "c1")
    assert isinstance(loaded, str) and "not sent" in loaded, loaded


def test_a_file_that_grew_past_the_cap_is_refused_when_read(tmp_path: Path) -> None:
    files, chat, _mine = _files(tmp_path, max_bytes=1024)
    (chat / "grow.log").write_bytes(b"x" * 10)
    att = _recorded(files, chat / "grow.log")
    (chat / "grow.log").write_bytes(b"x" * 4096)
    loaded = files.load(att, "fake", "c1")
    assert isinstance(loaded, str) and "grow.log" in loaded and "1.0 KB limit" in loaded


def test_an_old_row_without_a_folder_may_only_send_from_the_chats_cache(
    tmp_path: Path,
) -> None:
    files, chat, mine = _files(tmp_path)
    (chat / "a.txt").write_bytes(b"chat file")
    (mine / "b.txt").write_bytes(b"user file")
    ok = files.load(OutboundAttachment(path=str(chat / "a.txt")), "fake", "c1")
    assert isinstance(ok, OutboundAttachment) and ok.data == b"chat file"
    refused = files.load(OutboundAttachment(path=str(mine / "b.txt")), "fake", "c1")
    assert isinstance(refused, str) and "outside the allowed media folders" in refused
