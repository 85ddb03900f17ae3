"""Title rules: sanitizing, uniqueness and lineage numbering ("Fix CI" → "Fix CI #2")."""

from __future__ import annotations

import re
import unicodedata

from storage.errors import InvalidTitleError
from storage.sqlconn import Conn

__all__ = [
    "MAX_TITLE_LEN", "sanitize_title", "split_number", "next_lineage_title_on", "scope_of",
]

MAX_TITLE_LEN = 100
_NUMBERED = re.compile(r"^(.*?) #(\d+)$")


def sanitize_title(title: str | None) -> str | None:
    """Drop control, format (zero-width, bidi) and surrogate characters, collapse whitespace.

    Returns None for an empty result; raises `InvalidTitleError` above 100 characters.
    """
    if title is None:
        return None
    kept = "".join(
        " " if ch.isspace() else ch
        for ch in title
        if ch.isspace() or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co", "Cn")
    )
    cleaned = " ".join(kept.split())
    if not cleaned:
        return None
    if len(cleaned) > MAX_TITLE_LEN:
        raise InvalidTitleError(f"title is longer than {MAX_TITLE_LEN} characters")
    return cleaned


def split_number(title: str) -> tuple[str, int]:
    """("Fix CI #3") → ("Fix CI", 3); an unnumbered title counts as 1."""
    m = _NUMBERED.match(title)
    if m and m.group(1):
        return m.group(1), int(m.group(2))
    return title, 1


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


async def next_lineage_title_on(conn: Conn, title: str, scope_key: str | None) -> str:
    """The next free numbered title of `title`'s family within the scope `scope_key`
    (titles are unique per scope; None = sessions without a scope), read through `conn`."""
    base, _ = split_number(title)
    rows = await conn.execute_fetchall(
        "SELECT title FROM sessions WHERE (title = ? OR title LIKE ? ESCAPE '\\')"
        " AND COALESCE(scope_key, '') = COALESCE(?, '')",
        (base, _like_escape(base) + " #%", scope_key),
    )
    highest = 0
    for row in rows:
        b, n = split_number(row[0])
        if b == base:
            highest = max(highest, n)
    if highest == 0:
        return base
    return f"{base} #{max(1, highest) + 1}"


async def scope_of(conn: Conn, session_id: str) -> str | None:
    """The stored `scope_key` of a session (None when it has none or does not exist)."""
    rows = list(
        await conn.execute_fetchall("SELECT scope_key FROM sessions WHERE id = ?", (session_id,))
    )
    return rows[0][0] if rows else None
