"""Names and titles chosen by platform users reach the operator's terminal as plain text: no
rich markup is interpreted, no control sequence is passed through."""

from __future__ import annotations

import asyncio
from pathlib import Path

from gateway.paths import ensure_profile_dirs, paths
from storage import StateStore
from tests.config.conftest import run_hermes

HOSTILE = "[bold red]Admin[/] \x1b]0;pwned\x07\x1b[2J [link=https://evil.example]x[/link]"


async def _seed(home: Path) -> None:
    p = ensure_profile_dirs(paths(home / ".hermes"))
    async with await StateStore.open(p.state_db) as store:
        await store.create_pairing_code("telegram", "42", display=HOSTILE)
        await store.create_session(source="telegram", user_id="42", title="Plain title",
                                   chat_id="42")
        s = await store.create_session(source="telegram", user_id="42", chat_id="42")
        await store.append_messages(s.id, [{"role": "user", "content": HOSTILE}])


def test_pairing_list_prints_a_hostile_display_name_as_text(home_dir: Path) -> None:
    asyncio.run(_seed(home_dir))
    r = run_hermes(home_dir, "pairing", "list")
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert "[bold red]Admin[/]" in r.stdout  # shown literally, not rendered as markup
    assert "[link=https://evil.example]" in r.stdout


def test_sessions_commands_print_user_text_without_control_sequences(home_dir: Path) -> None:
    asyncio.run(_seed(home_dir))
    for args in (("sessions", "list"), ("sessions", "search", "Admin")):
        r = run_hermes(home_dir, *args)
        assert r.returncode == 0, r.stderr
        assert "\x1b" not in r.stdout, args
