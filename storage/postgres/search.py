"""Search on PostgreSQL: the same query language (`storage.fts_query`) and result shape as
the SQLite backend, over a generated `tsvector` (words) and `pg_trgm` (substrings, CJK).

Words: every term becomes a phrase query (`phraseto_tsquery`, or `to_tsquery` with `:*` for a
prefix term), combined as FTS5 would read them: `NOT` binds tightest, then AND (juxtaposition),
then `OR`. Text is split into words at every non-alphanumeric character on both sides, so
`deploy.sh` and `max_connections` are phrases of two words. Ranking mirrors the SQLite path:
a query matching `PROBE` rows or more returns its newest matches; otherwise the newest
`CANDIDATES` are ranked (`ts_rank_cd`, reported negated so that lower is better, like BM25).
Substrings and CJK: `ILIKE` over non-tool rows, served by the trigram index for terms of 3+
characters; shorter CJK terms scan a bounded window of the newest rows. Snippets and the
neighbouring previews come from `storage.search`, shared with SQLite.

The planner does not know that testing a row means reading its (TOASTed) vector or content,
so it likes sequential or backward primary-key scans that touch every row for a rare term.
Each search therefore runs in its own read transaction with `enable_seqscan = off` and
orders by `id + 0`: the GIN indexes find the matches, then the newest are kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import asyncpg

from storage.base import StoreBase
from storage.fts_query import ParsedQuery, Term, parse_query
from storage.search import CANDIDATES, LIKE_SCAN_ROWS, PROBE, _context, _filters, _like_escape
from storage.sqlconn import Conn
from storage.types import SearchHit, SessionScope

__all__ = ["PgSearchMixin", "tsquery_sql", "WORD_SPLIT"]

#: What the generated column and the query both treat as a word boundary.
WORD_SPLIT = re.compile(r"[\W_]+")
_VISIBLE = "(m.active = 1 OR m.compacted = 1)"
_CONFIG = "'hermes_words'::regconfig"


def _term_sql(term: Term, params: list[Any]) -> str:
    words = [w for w in WORD_SPLIT.split(term.text) if w]
    if not words:
        params.append("")
        return f"phraseto_tsquery({_CONFIG}, ?)"
    if term.prefix:
        # Only word characters reach to_tsquery: no user text is parsed as tsquery syntax.
        params.append(" <-> ".join(words[:-1] + [words[-1] + ":*"]))
        return f"to_tsquery({_CONFIG}, ?)"
    params.append(" ".join(words))
    return f"phraseto_tsquery({_CONFIG}, ?)"


def _groups(pq: ParsedQuery) -> list[list[tuple[bool, Term]]]:
    """OR-separated groups of (negated, term): `a b OR c NOT d` → [[a, b], [c, ¬d]]."""
    groups: list[list[tuple[bool, Term]]] = [[]]
    for op, term in zip(pq.ops, pq.terms, strict=True):
        if op == "OR" and groups[-1]:
            groups.append([])
        groups[-1].append((op == "NOT" and bool(groups[-1]), term))
    return [g for g in groups if g]


def tsquery_sql(pq: ParsedQuery, params: list[Any]) -> str:
    """A tsquery expression for `pq`, its values appended to `params`."""
    ors = []
    for group in _groups(pq):
        parts = []
        for negated, term in group:
            sql = _term_sql(term, params)
            parts.append(f"!!{sql}" if negated else sql)
        ors.append("(" + " && ".join(parts) + ")")
    return "(" + " || ".join(ors) + ")"


def _ilike_sql(pq: ParsedQuery, params: list[Any]) -> str:
    ors = []
    for group in _groups(pq):
        parts = []
        for negated, term in group:
            params.append(f"%{_like_escape(term.text)}%")
            like = "m.content ILIKE ? ESCAPE '\\'"
            parts.append(f"NOT ({like})" if negated else like)
        ors.append("(" + " AND ".join(parts) + ")")
    return "(" + " OR ".join(ors) + ")"


async def _ranked_words(conn: Conn, pq: ParsedQuery, filters: tuple[str, list[Any]],
                        limit: int) -> list[tuple[int, float]]:
    where, fparams = filters
    params: list[Any] = []
    query = tsquery_sql(pq, params)
    probe = await conn.execute_fetchall(
        f"SELECT m.id FROM messages m WHERE m.search_words @@ {query} AND {_VISIBLE}{where}"
        f" ORDER BY m.id + 0 DESC LIMIT {PROBE}",
        (*params, *fparams),
    )
    if not probe:
        return []
    if len(probe) >= PROBE:
        return [(int(r[0]), 0.0) for r in probe[:limit]]
    ids = [int(r[0]) for r in probe[:CANDIDATES]]
    params2: list[Any] = []
    query2 = tsquery_sql(pq, params2)
    rows = await conn.execute_fetchall(
        f"SELECT m.id, ts_rank_cd(m.search_words, {query2}) FROM messages m"
        " WHERE m.id = ANY(CAST(? AS BIGINT[]))",
        (*params2, ids),
    )
    return sorted(((int(r[0]), -float(r[1])) for r in rows), key=lambda x: (x[1], -x[0]))[
        :limit]


async def _substrings(conn: Conn, pq: ParsedQuery, filters: tuple[str, list[Any]],
                      limit: int, scope: SessionScope | None, *, window: bool
                      ) -> list[tuple[int, float]]:
    where, fparams = filters
    params: list[Any] = []
    cond = _ilike_sql(pq, params)
    bound, bound_params = "", []  # type: tuple[str, list[Any]]
    if window and scope is None:
        bound = " AND m.id > (SELECT COALESCE(MAX(id), 0) - ? FROM messages)"
        bound_params = [LIKE_SCAN_ROWS]
    elif window and scope is not None:
        bound = (" AND m.id IN (SELECT id FROM messages WHERE session_id IN"
                 " (SELECT id FROM sessions WHERE scope_key = ?) ORDER BY id DESC LIMIT ?)")
        bound_params = [scope.key, LIKE_SCAN_ROWS]
    rows = await conn.execute_fetchall(
        f"SELECT m.id FROM messages m WHERE m.role <> 'tool' AND {_VISIBLE}{bound}"
        f" AND {cond}{where} ORDER BY m.id + 0 DESC LIMIT ?",
        (*bound_params, *params, *fparams, limit),
    )
    return [(int(r[0]), 0.0) for r in rows]


class PgSearchMixin(StoreBase):
    """`search()` on PostgreSQL: safe for any input."""

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
        """Same contract as the SQLite backend's `search` (see `storage.search`): visible
        messages only, `scope` applied in the query, never raises for any query text."""
        pq = parse_query(query)
        if pq.empty:
            return []
        limit = max(1, min(int(limit), 200))
        filters = _filters(source, session_id, roles, scope)

        async def fn(conn: Conn) -> list[SearchHit]:
            await conn.execute("BEGIN")
            try:
                await conn.execute("SET LOCAL enable_seqscan = off")
                return await _find(conn, pq, filters, limit, scope)
            finally:
                await conn.execute("COMMIT")

        try:
            return await self._read(fn)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, ValueError, OverflowError,
                UnicodeError):
            return []


async def _find(conn: Conn, pq: ParsedQuery, filters: tuple[str, list[Any]], limit: int,
                scope: SessionScope | None) -> list[SearchHit]:
    found: list[tuple[int, float, bool]] = []
    if not pq.cjk:
        found = [(i, r, False) for i, r in
                 await _ranked_words(conn, pq, filters, limit)]
    if not found and (pq.trigram_ok or pq.cjk):
        subs = await _substrings(conn, pq, filters, limit, scope,
                                 window=not pq.trigram_ok)
        found = [(i, r, True) for i, r in subs]
    if not found:
        return []
    return await _context(conn, found, pq)
