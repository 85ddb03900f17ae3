"""Migration 8: the background self-reviews (a skill or memory write the agent decided on
after a turn, on the auxiliary model).

One row per review the gateway asked for, written once when it ended: whose turn caused it
(`principal`), why it ran (`trigger`: `tool_calls` or `iterations`), how it ended (`status`:
`done`, `failed` or `skipped`, with `reason` for the last two), what it wrote (`skills` and
`memories`, JSON lists) and what it cost (tokens and model calls)."""

SQL = """
CREATE TABLE self_reviews (
    id TEXT PRIMARY KEY,
    session_id TEXT,
    principal TEXT NOT NULL,
    trigger TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    skills TEXT NOT NULL DEFAULT '[]',
    memories TEXT NOT NULL DEFAULT '[]',
    model TEXT,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    model_calls INTEGER NOT NULL DEFAULT 0,
    requested_at REAL NOT NULL,
    finished_at REAL NOT NULL
);
CREATE INDEX idx_self_reviews_session ON self_reviews(session_id, requested_at);
CREATE INDEX idx_self_reviews_finished ON self_reviews(finished_at);
"""

POSTGRES = """
CREATE TABLE self_reviews (
    id TEXT PRIMARY KEY,
    session_id TEXT,
    principal TEXT NOT NULL,
    trigger TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    skills TEXT NOT NULL DEFAULT '[]',
    memories TEXT NOT NULL DEFAULT '[]',
    model TEXT,
    input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    model_calls INTEGER NOT NULL DEFAULT 0,
    requested_at DOUBLE PRECISION NOT NULL,
    finished_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX idx_self_reviews_session ON self_reviews(session_id, requested_at);
CREATE INDEX idx_self_reviews_finished ON self_reviews(finished_at);
"""
