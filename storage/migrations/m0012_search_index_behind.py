"""Migration 12: the SQLite search index is kept behind the messages, not in their insert.

Until now each message insert indexed the message in both FTS5 tables (word and trigram)
through triggers. FTS5 writes a new segment at the end of every transaction that touched
it, so a message stored in its own transaction (one chat: the user's message, then the
reply, each its own commit) cost ~100 us of indexing and a dozen page writes, on the path
between the user's message and the model's request and again before the reply goes out.

Now a message is indexed shortly after it is stored, many at once (`storage.searchindex`:
the writer indexes what was stored since the last run a moment after a write, before any
search of the same process, and when the store closes). `search_index.upto` is the highest
message id indexed. The update and delete triggers touch the index only for rows at or below
it (a row above it is indexed later, as it is then); the insert triggers are gone.
Everything stored before this migration was indexed by the old triggers: `upto` starts at
the highest id there is.

The trigram index is also rebuilt, once. Its update was two triggers, and SQLite fired the
one that indexes the new text before the one that removes the old: a message revised in
place (an image's description replacing its placeholder) lost the trigrams its old and new
texts share, so a substring or CJK search no longer found it. One trigger now removes, then
adds. The rebuild reads every message once (like migration 11's index), at the first start.

PostgreSQL's search vector is a generated column, maintained by the database: its step is
empty.
"""

SQL = """
CREATE TABLE IF NOT EXISTS search_index (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    upto INTEGER NOT NULL
);
INSERT OR IGNORE INTO search_index (id, upto) SELECT 1, COALESCE(MAX(id), 0) FROM messages;

DROP TRIGGER IF EXISTS messages_fts_ai;
DROP TRIGGER IF EXISTS messages_trigram_ai;
DROP TRIGGER IF EXISTS messages_fts_ad;
DROP TRIGGER IF EXISTS messages_trigram_ad;
DROP TRIGGER IF EXISTS messages_fts_au;
DROP TRIGGER IF EXISTS messages_trigram_au_old;
DROP TRIGGER IF EXISTS messages_trigram_au_new;

CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages
WHEN old.id <= (SELECT upto FROM search_index) BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls)
        VALUES ('delete', old.id, old.content, old.tool_name, old.tool_calls);
END;
CREATE TRIGGER messages_trigram_ad AFTER DELETE ON messages
WHEN old.role <> 'tool' AND old.id <= (SELECT upto FROM search_index) BEGIN
    INSERT INTO messages_trigram(messages_trigram, rowid, content)
        VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER messages_fts_au AFTER UPDATE OF content, tool_name, tool_calls, role
ON messages WHEN old.id <= (SELECT upto FROM search_index) BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls)
        VALUES ('delete', old.id, old.content, old.tool_name, old.tool_calls);
    INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)
        VALUES (new.id, new.content, new.tool_name, new.tool_calls);
END;
CREATE TRIGGER messages_trigram_au AFTER UPDATE OF content, role ON messages
WHEN old.id <= (SELECT upto FROM search_index) BEGIN
    INSERT INTO messages_trigram(messages_trigram, rowid, content)
        SELECT 'delete', old.id, old.content WHERE old.role <> 'tool';
    INSERT INTO messages_trigram(rowid, content)
        SELECT new.id, new.content WHERE new.role <> 'tool';
END;

INSERT INTO messages_trigram(messages_trigram) VALUES ('delete-all');
INSERT INTO messages_trigram(rowid, content)
    SELECT id, content FROM messages WHERE role <> 'tool' ORDER BY id;
"""

POSTGRES = """
SELECT 1;
"""
