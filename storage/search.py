"""Full-text search over messages (FTS5 BM25, trigram for CJK and substrings).

Cost is bounded for common words: a query matching fewer than `PROBE` rows is ranked by BM25
over its newest `CANDIDATES` matches (all of them for rare terms, so ranking is exact); a
query matching more returns its newest matches (its terms carry almost no information, and
BM25's document-frequency pass would walk every match). Snippets are cut in Python from the
returned hits only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from storage.base import StoreBase
from storage.codec import preview
from storage.fts_query import ParsedQuery, parse_query
from storage.snippets import make_snippet, term_patterns
from storage.sqlconn import Conn
from storage.types import MessagePreview, SearchHit, SessionScope

__all__ = ["SearchMixin", "CANDIDATES", "PROBE", "HIGHLIGHT"]

CANDIDATES = 300
PROBE = 2_000
LIKE_SCAN_ROWS = 50_000
HIGHLIGHT = ("«", "»")
_VISIBLE = "(m.active = 1 OR m.compacted = 1)"


def _filters(
    source: str | None, session_id: str | None, roles: Sequence[str] | None,
    scope: SessionScope | None = None,
) -> tuple[str, list[Any]]:
    sql: str = ""
    params: list[Any] = []
    if scope is not None:
        sql += " AND m.session_id IN (SELECT id FROM sessions WHERE scope_key = ?)"
        params.append(scope.key)
    if session_id is not None:
        sql += " AND m.session_id = ?"
        params.append(session_id)
    if source is not None:
        sql += " AND m.session_id IN (SELECT id FROM sessions WHERE source = ?)"
        params.append(source)
    if roles:
        sql += f" AND m.role IN ({', '.join('?' * len(roles))})"
        params.extend(roles)
    return sql, params


async def _ranked(
    conn: Conn,
    table: str,
    expr: str,
    filters: tuple[str, list[Any]],
    limit: int,
    exclude: set[int],
) -> list[tuple[int, float]]:
    """(id, rank) of up to `limit` visible matches, best first.

    BM25 needs each term's document frequency, which FTS5 computes by walking the term's
    whole doclist; so a query matching `PROBE` rows or more (its terms carry little
    information at that point) skips BM25 and returns the newest matches. Otherwise BM25
    ranks the newest `CANDIDATES` matches. With filters (a scope, a session, roles) the
    probe counts only matches that pass them.
    """
    where, params = filters
    if where:  # the newest matches *that pass the filters*: others' rows never crowd them out
        probe = list(
            await conn.execute_fetchall(
                f"SELECT {table}.rowid FROM {table} JOIN messages m ON m.id = {table}.rowid"
                f" WHERE {table} MATCH ? AND {_VISIBLE}{where}"
                f" ORDER BY {table}.rowid DESC LIMIT {PROBE}",
                (expr, *params),
            )
        )
    else:
        probe = list(
            await conn.execute_fetchall(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC"
                f" LIMIT {PROBE}",
                (expr,),
            )
        )
    if not probe:
        return []
    if len(probe) >= PROBE:
        rank, bound = "0.0", 0
        cap = limit + len(exclude)
    else:
        rank, bound = f"bm25({table})", probe[min(len(probe), CANDIDATES) - 1][0]
        cap = len(probe)
    rows = await conn.execute_fetchall(
        f"SELECT m.id, {rank} FROM {table} JOIN messages m ON m.id = {table}.rowid"
        f" WHERE {table} MATCH ? AND {table}.rowid >= ? AND {_VISIBLE}{where}"
        f" ORDER BY {table}.rowid DESC LIMIT ?",
        (expr, bound, *params, cap),
    )
    return sorted(
        ((r[0], float(r[1])) for r in rows if r[0] not in exclude), key=lambda x: (x[1], -x[0])
    )[:limit]


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


async def _like(
    conn: Conn,
    pq: ParsedQuery,
    filters: tuple[str, list[Any]],
    limit: int,
    scope: SessionScope | None,
) -> list[tuple[int, float]]:
    """Short CJK terms the trigram index cannot look up: a bounded newest-first scan of
    non-tool rows (the same rows the trigram index covers): the newest `LIKE_SCAN_ROWS`
    messages of the scope, or of the whole store without one."""
    where, params = filters
    conds = " AND ".join("m.content LIKE ? ESCAPE '\\'" for _ in pq.terms)
    likes = [f"%{_like_escape(t.text)}%" for t in pq.terms]
    if scope is None:
        window = "m.id > (SELECT COALESCE(MAX(id), 0) - ? FROM messages)"
        window_params: list[Any] = [LIKE_SCAN_ROWS]
    else:
        window = (
            "m.id IN (SELECT id FROM messages WHERE session_id IN"
            " (SELECT id FROM sessions WHERE scope_key = ?) ORDER BY id DESC LIMIT ?)"
        )
        window_params = [scope.key, LIKE_SCAN_ROWS]
    rows = await conn.execute_fetchall(
        f"SELECT m.id FROM messages m WHERE {window}"
        f" AND m.role <> 'tool' AND {_VISIBLE} AND {conds}{where}"
        " ORDER BY m.id DESC LIMIT ?",
        (*window_params, *likes, *params, limit),
    )
    return [(r[0], 0.0) for r in rows]


async def _context(
    conn: Conn, found: list[tuple[int, float, bool]], pq: ParsedQuery
) -> list[SearchHit]:
    ids = [f[0] for f in found]
    marks = ", ".join("?" * len(ids))
    rows = await conn.execute_fetchall(
        "SELECT h.id, h.session_id, h.role, h.timestamp, s.title, s.source,"
        " h.content, h.tool_calls, h.tool_name,"
        " (SELECT m.id FROM messages m WHERE m.session_id = h.session_id AND m.id < h.id"
        f"   AND {_VISIBLE} ORDER BY m.id DESC LIMIT 1),"
        " (SELECT m.id FROM messages m WHERE m.session_id = h.session_id AND m.id > h.id"
        f"   AND {_VISIBLE} ORDER BY m.id LIMIT 1)"
        f" FROM messages h JOIN sessions s ON s.id = h.session_id WHERE h.id IN ({marks})",
        ids,
    )
    info = {r[0]: r for r in rows}
    near = {r[9] for r in rows if r[9] is not None} | {r[10] for r in rows if r[10] is not None}
    words = term_patterns(pq.terms, substring=False)
    subs = term_patterns(pq.terms, substring=True)
    previews: dict[int, MessagePreview] = {}
    if near:
        prow = await conn.execute_fetchall(
            "SELECT id, role, substr(content, 1, 200), timestamp FROM messages"
            f" WHERE id IN ({', '.join('?' * len(near))})",
            list(near),
        )
        previews = {p[0]: MessagePreview(p[0], p[1], preview(p[2]), p[3]) for p in prow}
    hits = []
    for mid, rank, substring in found:
        r = info.get(mid)
        if r is None:
            continue
        snippet = make_snippet((r[6], r[7], r[8]), subs if substring else words, HIGHLIGHT)
        hits.append(
            SearchHit(
                session_id=r[1],
                message_id=mid,
                role=r[2],
                snippet=snippet,
                timestamp=r[3],
                session_title=r[4],
                source=r[5],
                rank=float(rank),
                before=previews.get(r[9]) if r[9] is not None else None,
                after=previews.get(r[10]) if r[10] is not None else None,
            )
        )
    return hits


class SearchMixin(StoreBase):
    """`search()`: safe for any input."""

    async def search(
        self,
        query: object,
        *,
        limit: int = 20,
        source: str | None = None,
        session_id: str | None = None,
        roles: Sequence[str] | None = None,
        scope: SessionScope | None = None,
    ) -> list[SearchHit]:
        """Search visible messages (active or compaction-archived; rewound rows are hidden),
        only those of sessions in `scope` when given (filtered in SQL before ranking and
        limits, so a scope's own hits are never hidden behind others').

        Words go to the unicode61 index (BM25, best first); CJK text, and substrings of 3+
        characters when the word index finds nothing, go to the trigram index (user and
        assistant rows); CJK terms under 3 characters use a bounded scan. Each hit carries
        the visible message before and after it. Must not raise for any query text: a query
        with nothing searchable, or any SQLite error, gives [].
        """
        pq = parse_query(query)
        if pq.empty:
            return []
        limit = max(1, min(int(limit), 200))
        filters = _filters(source, session_id, roles, scope)

        async def fn(conn: Conn) -> list[SearchHit]:
            found: list[tuple[int, float, bool]] = []
            if not pq.cjk:
                words = await _ranked(conn, "messages_fts", pq.fts5(), filters, limit, set())
                found = [(i, r, False) for i, r in words]
            if not found and pq.trigram_ok:
                seen = {f[0] for f in found}
                subs = await _ranked(
                    conn, "messages_trigram", pq.trigram(), filters, limit, seen
                )
                found += [(i, r, True) for i, r in subs]
            elif pq.cjk and not pq.trigram_ok:
                found = [(i, r, True) for i, r in await _like(conn, pq, filters, limit, scope)]
            if not found:
                return []
            return await _context(conn, found, pq)

        await self._index_for_search()  # what this process stored, however recently
        try:
            return await self._read(fn)
        except (sqlite3.Error, ValueError, OverflowError):
            return []
