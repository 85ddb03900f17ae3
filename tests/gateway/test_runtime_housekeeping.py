"""Bounded growth: the running gateway forgets old bookkeeping rows, never conversations."""

from __future__ import annotations

import asyncio

from tests.fakes.openai_server import text
from tests.gateway.runtime_harness import KEY, Clock, runner_for


async def test_the_gateway_prunes_old_ledgers_but_keeps_the_conversation(tmp_path, model):
    model.enqueue(text("first answer"))
    async with runner_for(tmp_path, model) as (runner, fake):
        await fake.inject("first question", chat_id="c1", user_id="u1")
        await fake.wait_turns(1)
        session = await runner.store.find_by_session_key(KEY)
        assert await runner.store.outbox_latest_for_session(session.id) is not None
    clock = Clock()
    clock.advance(30 * 86400)  # a month later, retention 7 days (the default)
    async with runner_for(tmp_path, model, clock=clock) as (runner, fake):
        for _ in range(100):
            if await runner.store.outbox_latest_for_session(session.id) is None:
                break
            await asyncio.sleep(0.02)
        assert await runner.store.outbox_latest_for_session(session.id) is None
        # The dedup record of the old event is gone; the conversation is all still there.
        assert await runner.store.record_if_new("fake", "probe") is True
        history = await runner.store.load_history(session.id)
        assert [m["content"] for m in history] == ["first question", "first answer"]


async def test_retention_is_configurable_and_has_a_floor(tmp_path, model):
    from gateway.config.errors import ConfigError
    from tests.gateway.runtime_harness import make_config

    assert make_config(model, gateway__ledger_retention_days=30).gateway.ledger_retention_days == 30
    try:
        make_config(model, gateway__ledger_retention_days=0.5)
    except ConfigError as exc:
        assert "gateway.ledger_retention_days" in str(exc)
    else:
        raise AssertionError("a retention under one day was accepted")


async def test_old_cached_attachments_are_deleted_recent_ones_kept(tmp_path, model):
    import os
    import time

    cache = tmp_path / "cache" / "telegram"
    cache.mkdir(parents=True)
    old, fresh = cache / "old_photo.jpg", cache / "fresh_doc.pdf"
    old.write_bytes(b"x" * 10)
    fresh.write_bytes(b"y" * 10)
    month_ago = time.time() - 30 * 86400
    os.utime(old, (month_ago, month_ago))
    outside = tmp_path / "precious.txt"  # reachable only through a symlink in the cache
    outside.write_text("keep me")
    os.utime(outside, (month_ago, month_ago))
    (cache / "link").symlink_to(outside)
    from gateway.principals import folder_name

    mine = tmp_path / "workspace" / "users" / folder_name("fake", "u1")
    spilled = mine / ".tool-output" / "search_files-call_1.txt"  # in the user's workspace
    spilled.parent.mkdir(parents=True)
    spilled.write_text("a huge tool output")
    os.utime(spilled, (month_ago, month_ago))
    notes = mine / "notes.txt"  # the user's own old file is not a cache
    notes.write_text("kept")
    os.utime(notes, (month_ago, month_ago))
    async with runner_for(tmp_path, model):
        for _ in range(100):
            if not old.exists() and not spilled.exists():
                break
            await asyncio.sleep(0.02)
    assert not old.exists() and not spilled.exists()
    assert fresh.exists() and outside.read_text() == "keep me"
    assert notes.read_text() == "kept"


async def test_cache_retention_zero_keeps_everything(tmp_path, model):
    import os
    import time

    cache = tmp_path / "cache"
    cache.mkdir(parents=True)
    old = cache / "old.bin"
    old.write_bytes(b"x")
    os.utime(old, (time.time() - 90 * 86400,) * 2)
    async with runner_for(tmp_path, model, gateway__media__cache_retention_days=0):
        await asyncio.sleep(0.3)
    assert old.exists()


async def test_the_cache_is_kept_under_its_sizes_oldest_files_first(tmp_path, model):
    """`gateway.media.chat_cache_max_mb` per chat folder, then `cache_max_mb` for the whole
    cache: the least recently modified files go first; symlinks are neither counted nor
    followed; files under both limits stay, however old they are within retention."""
    import os
    import time

    chats = tmp_path / "cache" / "chats"
    busy, quiet = chats / "telegram.busy", chats / "slack.quiet"
    busy.mkdir(parents=True)
    quiet.mkdir(parents=True)
    now = time.time()
    files = {"a1": (busy, 500), "b1": (quiet, 400), "a2": (busy, 300), "a3": (busy, 200)}
    for name, (folder, age_s) in files.items():
        path = folder / f"{name}.bin"
        path.write_bytes(b"x" * 40_000)
        os.utime(path, (now - age_s, now - age_s))
    outside = tmp_path / "big-outside.bin"
    outside.write_bytes(b"y" * 500_000)
    (busy / "link.bin").symlink_to(outside)
    # Per chat at most ~92 KB (the busy chat's 120 KB loses a1); in all at most ~107 KB
    # (a2 + a3 + b1 = 120 KB loses b1, the oldest left).
    async with runner_for(tmp_path, model, gateway__media__chat_cache_max_mb=0.088,
                          gateway__media__cache_max_mb=0.102):
        for _ in range(200):
            if not (busy / "a1.bin").exists() and not (quiet / "b1.bin").exists():
                break
            await asyncio.sleep(0.02)
    left = sorted(p.name for p in chats.rglob("*.bin"))
    assert left == ["a2.bin", "a3.bin", "link.bin"]
    assert outside.stat().st_size == 500_000
