"""Search: English, Chinese, substrings, visibility, hostile input."""

from __future__ import annotations

import sqlite3

import pytest
from _storage_testlib import FakeClock, turn
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import StateStore, parse_query


@pytest.fixture
async def filled(store: StateStore, clock: FakeClock) -> StateStore:
    a = await store.create_session(source="telegram", title="Database trouble")
    await store.append_messages(a.id, turn("the postgres connection keeps timing out",
                                           "check max_connections in postgresql.conf"))
    await store.append_messages(a.id, turn("数据库连接失败，怎么办？", "请检查网络和防火墙配置。"))
    b = await store.create_session(source="slack")
    await store.append_messages(b.id, [
        {"role": "user", "content": "run the deploy script"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "terminal", "arguments": "{\"cmd\": \"./deploy.sh\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "terminal",
         "content": "kubernetes rollout finished: deployment/web-frontend successfully rolled"},
        {"role": "assistant", "content": "The deployment finished."},
    ])
    return store


async def test_english_words_with_context(filled: StateStore) -> None:
    hits = await filled.search("postgres connection")
    assert len(hits) == 1
    h = hits[0]
    assert h.role == "user" and h.session_title == "Database trouble" and h.source == "telegram"
    assert "«postgres»" in h.snippet and "«connection»" in h.snippet
    assert h.before is None
    assert h.after is not None and h.after.content.startswith("check max_connections")


async def test_context_previews_are_bounded(store: StateStore) -> None:
    s = await store.create_session(source="cli")
    await store.append_messages(s.id, [
        {"role": "user", "content": "x" * 5000},
        {"role": "assistant", "content": "needle here"},
        {"role": "user", "content": "y" * 5000},
    ])
    (h,) = await store.search("needle")
    assert h.before is not None and h.after is not None
    assert len(h.before.content) <= 200 and len(h.after.content) <= 200
    assert h.before.content.startswith("xxx") and h.after.role == "user"


async def test_chinese_substrings(filled: StateStore) -> None:
    for q in ("连接失败", "数据库", "数据库连接失败", "防火墙"):
        hits = await filled.search(q)
        assert [h.role for h in hits] in (["user"], ["assistant"]), q
        assert "«" in hits[0].snippet
    short = await filled.search("连接")  # two characters: below trigram size, still found
    assert len(short) == 1 and short[0].role == "user"
    assert await filled.search("不存在的词") == []


async def test_substrings_of_three_or_more(filled: StateStore) -> None:
    hits = await filled.search("ostgre")
    assert {h.role for h in hits} == {"user", "assistant"}
    assert all("«ostgre»" in h.snippet for h in hits)
    assert any("«max_conn»ections" in h.snippet for h in await filled.search("max_conn"))


async def test_tool_output_and_arguments_are_searchable(filled: StateStore) -> None:
    hits = await filled.search("kubernetes rollout")
    assert [h.role for h in hits] == ["tool"]
    assert hits[0].before is not None and hits[0].before.role == "assistant"
    args = await filled.search("deploy.sh")
    assert any(h.role == "assistant" for h in args)


async def test_filters(filled: StateStore) -> None:
    assert {h.source for h in await filled.search("deploy", source="slack")} == {"slack"}
    assert await filled.search("postgres", source="slack") == []
    sessions = await filled.list_sessions(source="telegram")
    hits = await filled.search("postgres", session_id=sessions[0].id)
    assert len(hits) == 1
    assert [h.role for h in await filled.search("deploy", roles=["user"])] == ["user"]


async def test_rewound_hidden_compacted_found(store: StateStore, clock: FakeClock) -> None:
    s = await store.create_session(source="cli")
    await store.append_messages(s.id, turn("alpha question", "alpha answer"))
    await store.append_messages(s.id, turn("zebra question", "zebra answer"))
    await store.rewind(s.id, 1)
    assert await store.search("zebra") == []
    assert await store.search("ebr") == []  # trigram path hides them too
    last = await store.last_message_id(s.id)
    assert last is not None
    lease = await store.acquire_lease(s.id, "job", 30)
    assert lease is not None
    await store.commit_in_place(
        lease, s.id, snapshot_last_message_id=last,
        compressed_messages=[{"role": "assistant", "content": "[CONTEXT COMPACTION] summary",
                              "_compressed_summary": True}],
    )
    assert len(await store.search("alpha")) == 2  # archived by compaction: still searchable
    assert len(await store.search("summary")) == 1


HOSTILE = ['"foo AND (', "*", "NEAR(", '"', "-", "^", "", "   ", "AND", "OR NOT", "foo*bar*",
           "a:b", "col:value", "{x}", "\x00", "\ud800", "\ud83d", "NEAR(a b, 2)", "x" * 100_000,
           "'; DROP TABLE messages; --", "((((((", "\"\"\"", "-foo", "+bar", "foo OR", "NOT",
           "连", "数据库 AND (", "🙂", "\u200b", "\\", "%", "_"]


@pytest.mark.parametrize("query", HOSTILE)
async def test_hostile_queries_never_raise(filled: StateStore, query: str) -> None:
    hits = await filled.search(query)
    assert isinstance(hits, list)


async def test_hostile_non_string(filled: StateStore) -> None:
    assert await filled.search(None) == []
    assert await filled.search(b"bytes") == []
    assert await filled.search(12345) == []


_FTS = sqlite3.connect(":memory:")
_FTS.execute("CREATE VIRTUAL TABLE w USING fts5(content, tokenize='unicode61 remove_diacritics 2')")
_FTS.execute("CREATE VIRTUAL TABLE t USING fts5(content, tokenize='trigram')")
_FTS.execute("INSERT INTO w VALUES ('hello world 数据库')")
_FTS.execute("INSERT INTO t VALUES ('hello world 数据库')")


@settings(max_examples=300, deadline=None)
@given(q=st.text(alphabet=st.characters(), max_size=80))
def test_sanitized_expressions_are_valid_fts5(q: str) -> None:
    """The sanitizer's output never is an FTS5 syntax error (search() would hide one)."""
    pq = parse_query(q)
    if pq.empty:
        return
    _FTS.execute("SELECT rowid FROM w WHERE w MATCH ?", (pq.fts5(),)).fetchall()
    _FTS.execute("SELECT rowid FROM t WHERE t MATCH ?", (pq.trigram(),)).fetchall()


@settings(max_examples=200, deadline=None)
@given(q=st.lists(st.sampled_from(['"', "(", ")", "*", "AND", "OR", "NOT", "NEAR", "^", "-",
                                   ":", "foo", "bar", "数据", "{", "}", "+", " "]), max_size=12))
def test_operator_soup_is_valid_fts5(q: list[str]) -> None:
    pq = parse_query(" ".join(q))
    if not pq.empty:
        _FTS.execute("SELECT rowid FROM w WHERE w MATCH ?", (pq.fts5(),)).fetchall()
        _FTS.execute("SELECT rowid FROM t WHERE t MATCH ?", (pq.trigram(),)).fetchall()
