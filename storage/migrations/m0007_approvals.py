"""Migration 7: approvals of dangerous tool calls (the `terminal` tool), asked in the chat.

One row per request: who asked, in which chat and session, what (the command, redacted) and
why it needed approval; then the decision (`approved`, `denied`, `timeout`), who made it and
when. Rows are never updated once decided."""

SQL = """
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    session_id TEXT,
    platform TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    requester TEXT NOT NULL,
    tool TEXT NOT NULL,
    command TEXT NOT NULL,
    reason TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    decided_by TEXT,
    created_at REAL NOT NULL,
    decided_at REAL
);
CREATE INDEX idx_approvals_session ON approvals(session_id, created_at);
"""

POSTGRES = """
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    session_id TEXT,
    platform TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    requester TEXT NOT NULL,
    tool TEXT NOT NULL,
    command TEXT NOT NULL,
    reason TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    decided_by TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    decided_at DOUBLE PRECISION
);
CREATE INDEX idx_approvals_session ON approvals(session_id, created_at);
"""
