"""Migration 1: the initial schema (DESIGN.md §3)."""

from __future__ import annotations

__all__ = ["SQL", "POSTGRES"]

SQL = """
CREATE TABLE sessions (
    id                  TEXT PRIMARY KEY,
    source              TEXT NOT NULL,
    user_id             TEXT,
    session_key         TEXT,
    chat_id             TEXT,
    chat_type           TEXT,
    thread_id           TEXT,
    model               TEXT,
    system_prompt       TEXT,
    parent_session_id   TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    lineage_kind        TEXT,
    started_at          REAL NOT NULL,
    ended_at            REAL,
    end_reason          TEXT,
    title               TEXT,
    input_tokens        INTEGER NOT NULL DEFAULT 0,
    output_tokens       INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens   INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens  INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens    INTEGER NOT NULL DEFAULT 0,
    estimated_cost_usd  REAL,
    actual_cost_usd     REAL,
    cost_status         TEXT,
    cooldown_until      REAL,
    cooldown_error      TEXT,
    fallback_streak     INTEGER NOT NULL DEFAULT 0,
    ineffective_count   INTEGER NOT NULL DEFAULT 0,
    last_prompt_tokens  INTEGER,
    compression_count   INTEGER NOT NULL DEFAULT 0,
    archived            INTEGER NOT NULL DEFAULT 0,
    pinned              INTEGER NOT NULL DEFAULT 0,
    last_activity       REAL,
    message_count       INTEGER NOT NULL DEFAULT 0,
    api_call_count      INTEGER NOT NULL DEFAULT 0,
    profile_name        TEXT
);
CREATE UNIQUE INDEX idx_sessions_title ON sessions(title) WHERE title IS NOT NULL;
CREATE INDEX idx_sessions_started ON sessions(started_at DESC);
CREATE INDEX idx_sessions_parent ON sessions(parent_session_id)
    WHERE parent_session_id IS NOT NULL;
CREATE INDEX idx_sessions_key ON sessions(session_key, started_at DESC)
    WHERE session_key IS NOT NULL;

CREATE TABLE messages (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id          TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    role                TEXT NOT NULL,
    active              INTEGER NOT NULL DEFAULT 1,
    compacted           INTEGER NOT NULL DEFAULT 0,
    timestamp           REAL NOT NULL,
    tool_name           TEXT,
    tool_call_id        TEXT,
    finish_reason       TEXT,
    token_count         INTEGER,
    platform_message_id TEXT,
    content_json        INTEGER NOT NULL DEFAULT 0,
    meta                TEXT,
    reasoning           TEXT,
    tool_calls          TEXT,
    api_content         TEXT,
    content             TEXT
);
CREATE INDEX idx_messages_session ON messages(session_id, id);
CREATE INDEX idx_messages_platform_id ON messages(session_id, platform_message_id)
    WHERE platform_message_id IS NOT NULL;

-- Full-text indexes read their text from `messages` (external content): no second copy.
CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, tool_name, tool_calls,
    content='messages', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE messages_trigram USING fts5(
    content, content='messages', content_rowid='id', tokenize='trigram'
);

CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)
        VALUES (new.id, new.content, new.tool_name, new.tool_calls);
END;
CREATE TRIGGER messages_trigram_ai AFTER INSERT ON messages WHEN new.role <> 'tool' BEGIN
    INSERT INTO messages_trigram(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls)
        VALUES ('delete', old.id, old.content, old.tool_name, old.tool_calls);
END;
CREATE TRIGGER messages_trigram_ad AFTER DELETE ON messages WHEN old.role <> 'tool' BEGIN
    INSERT INTO messages_trigram(messages_trigram, rowid, content)
        VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER messages_fts_au AFTER UPDATE OF content, tool_name, tool_calls, role
ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls)
        VALUES ('delete', old.id, old.content, old.tool_name, old.tool_calls);
    INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)
        VALUES (new.id, new.content, new.tool_name, new.tool_calls);
END;
CREATE TRIGGER messages_trigram_au_old AFTER UPDATE OF content, role ON messages
WHEN old.role <> 'tool' BEGIN
    INSERT INTO messages_trigram(messages_trigram, rowid, content)
        VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER messages_trigram_au_new AFTER UPDATE OF content, role ON messages
WHEN new.role <> 'tool' BEGIN
    INSERT INTO messages_trigram(rowid, content) VALUES (new.id, new.content);
END;

CREATE TABLE compression_leases (
    session_id   TEXT PRIMARY KEY,
    holder       TEXT,
    token        INTEGER NOT NULL,
    acquired_at  REAL NOT NULL,
    expires_at   REAL NOT NULL
);

CREATE TABLE inbound_events (
    platform     TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    recorded_at  REAL NOT NULL,
    PRIMARY KEY (platform, event_id)
) WITHOUT ROWID;
CREATE INDEX idx_inbound_recorded ON inbound_events(recorded_at);

CREATE TABLE outbox (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id            TEXT,
    platform              TEXT NOT NULL,
    chat_id               TEXT NOT NULL,
    thread_id             TEXT,
    reply_to              TEXT,
    text                  TEXT NOT NULL,
    state                 TEXT NOT NULL DEFAULT 'pending',
    platform_message_ids  TEXT NOT NULL DEFAULT '[]',
    attempts              INTEGER NOT NULL DEFAULT 0,
    created_at            REAL NOT NULL,
    updated_at            REAL NOT NULL,
    last_error            TEXT
);
CREATE INDEX idx_outbox_open ON outbox(state, created_at)
    WHERE state IN ('pending', 'sent');

CREATE TABLE cursors (
    name   TEXT PRIMARY KEY,
    value  TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE pairing_codes (
    platform     TEXT NOT NULL,
    code_hash    TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    display      TEXT,
    created_at   REAL NOT NULL,
    expires_at   REAL NOT NULL,
    approved_at  REAL,
    PRIMARY KEY (platform, code_hash)
) WITHOUT ROWID;
CREATE INDEX idx_pairing_user ON pairing_codes(platform, user_id, created_at);

CREATE TABLE approved_users (
    platform     TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    display      TEXT,
    approved_at  REAL NOT NULL,
    PRIMARY KEY (platform, user_id)
) WITHOUT ROWID;

CREATE TABLE unreachable_chats (
    platform  TEXT NOT NULL,
    chat_id   TEXT NOT NULL,
    reason    TEXT,
    since     REAL NOT NULL,
    PRIMARY KEY (platform, chat_id)
) WITHOUT ROWID;
"""

#: The same schema on PostgreSQL. Times are epoch seconds (double precision), counters bigint.
#: Search: a generated `tsvector` (text split into words at every non-alphanumeric character,
#: then a copy of the `simple` configuration that also strips accents, like unicode61 with
#: remove_diacritics) for words, and a `pg_trgm` GIN index on the
#: content of non-tool rows for substrings and CJK.
POSTGRES = """
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS unaccent;
CREATE TEXT SEARCH CONFIGURATION hermes_words (COPY = simple);
ALTER TEXT SEARCH CONFIGURATION hermes_words
    ALTER MAPPING FOR asciiword, word, numword, asciihword, hword, numhword,
                      hword_asciipart, hword_part, hword_numpart
    WITH unaccent, simple;

CREATE TABLE sessions (
    id                  TEXT PRIMARY KEY,
    source              TEXT NOT NULL,
    user_id             TEXT,
    session_key         TEXT,
    chat_id             TEXT,
    chat_type           TEXT,
    thread_id           TEXT,
    model               TEXT,
    system_prompt       TEXT,
    parent_session_id   TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    lineage_kind        TEXT,
    started_at          DOUBLE PRECISION NOT NULL,
    ended_at            DOUBLE PRECISION,
    end_reason          TEXT,
    title               TEXT,
    input_tokens        BIGINT NOT NULL DEFAULT 0,
    output_tokens       BIGINT NOT NULL DEFAULT 0,
    cache_read_tokens   BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens  BIGINT NOT NULL DEFAULT 0,
    reasoning_tokens    BIGINT NOT NULL DEFAULT 0,
    estimated_cost_usd  DOUBLE PRECISION,
    actual_cost_usd     DOUBLE PRECISION,
    cost_status         TEXT,
    cooldown_until      DOUBLE PRECISION,
    cooldown_error      TEXT,
    fallback_streak     INTEGER NOT NULL DEFAULT 0,
    ineffective_count   INTEGER NOT NULL DEFAULT 0,
    last_prompt_tokens  BIGINT,
    compression_count   INTEGER NOT NULL DEFAULT 0,
    archived            INTEGER NOT NULL DEFAULT 0,
    pinned              INTEGER NOT NULL DEFAULT 0,
    last_activity       DOUBLE PRECISION,
    message_count       BIGINT NOT NULL DEFAULT 0,
    api_call_count      BIGINT NOT NULL DEFAULT 0,
    profile_name        TEXT
);
CREATE UNIQUE INDEX idx_sessions_title ON sessions(title) WHERE title IS NOT NULL;
CREATE INDEX idx_sessions_started ON sessions(started_at DESC);
CREATE INDEX idx_sessions_parent ON sessions(parent_session_id)
    WHERE parent_session_id IS NOT NULL;
CREATE INDEX idx_sessions_key ON sessions(session_key, started_at DESC)
    WHERE session_key IS NOT NULL;

CREATE TABLE messages (
    id                  BIGSERIAL PRIMARY KEY,
    session_id          TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    role                TEXT NOT NULL,
    active              INTEGER NOT NULL DEFAULT 1,
    compacted           INTEGER NOT NULL DEFAULT 0,
    timestamp           DOUBLE PRECISION NOT NULL,
    tool_name           TEXT,
    tool_call_id        TEXT,
    finish_reason       TEXT,
    token_count         BIGINT,
    platform_message_id TEXT,
    content_json        INTEGER NOT NULL DEFAULT 0,
    meta                TEXT,
    reasoning           TEXT,
    tool_calls          TEXT,
    api_content         TEXT,
    content             TEXT,
    search_words        tsvector GENERATED ALWAYS AS (
        to_tsvector('hermes_words'::regconfig, regexp_replace(
            left(coalesce(content, ''), 200000) || ' ' || coalesce(tool_name, '')
            || ' ' || left(coalesce(tool_calls, ''), 50000),
            '[^[:alnum:]]+', ' ', 'g'))
    ) STORED
);
CREATE INDEX idx_messages_session ON messages(session_id, id);
CREATE INDEX idx_messages_platform_id ON messages(session_id, platform_message_id)
    WHERE platform_message_id IS NOT NULL;
CREATE INDEX idx_messages_words ON messages USING gin (search_words);
CREATE INDEX idx_messages_trigram ON messages USING gin (content gin_trgm_ops)
    WHERE role <> 'tool';

CREATE TABLE compression_leases (
    session_id   TEXT PRIMARY KEY,
    holder       TEXT,
    token        BIGINT NOT NULL,
    acquired_at  DOUBLE PRECISION NOT NULL,
    expires_at   DOUBLE PRECISION NOT NULL
);

CREATE TABLE inbound_events (
    platform     TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    recorded_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (platform, event_id)
);
CREATE INDEX idx_inbound_recorded ON inbound_events(recorded_at);

CREATE TABLE outbox (
    id                    BIGSERIAL PRIMARY KEY,
    session_id            TEXT,
    platform              TEXT NOT NULL,
    chat_id               TEXT NOT NULL,
    thread_id             TEXT,
    reply_to              TEXT,
    text                  TEXT NOT NULL,
    state                 TEXT NOT NULL DEFAULT 'pending',
    platform_message_ids  TEXT NOT NULL DEFAULT '[]',
    attempts              INTEGER NOT NULL DEFAULT 0,
    created_at            DOUBLE PRECISION NOT NULL,
    updated_at            DOUBLE PRECISION NOT NULL,
    last_error            TEXT
);
CREATE INDEX idx_outbox_open ON outbox(state, created_at)
    WHERE state IN ('pending', 'sent');

CREATE TABLE cursors (
    name   TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);

CREATE TABLE pairing_codes (
    platform     TEXT NOT NULL,
    code_hash    TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    display      TEXT,
    created_at   DOUBLE PRECISION NOT NULL,
    expires_at   DOUBLE PRECISION NOT NULL,
    approved_at  DOUBLE PRECISION,
    PRIMARY KEY (platform, code_hash)
);
CREATE INDEX idx_pairing_user ON pairing_codes(platform, user_id, created_at);

CREATE TABLE approved_users (
    platform     TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    display      TEXT,
    approved_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (platform, user_id)
);

CREATE TABLE unreachable_chats (
    platform  TEXT NOT NULL,
    chat_id   TEXT NOT NULL,
    reason    TEXT,
    since     DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (platform, chat_id)
);
"""
