"""Schema v5: every session knows whose it is (`scope_key`), and titles are unique per scope.

`scope_key` is a virtual generated column, so existing rows get it without a rewrite and no
writer can forget it: a direct chat's session belongs to its user (`u:` + platform + user
id), any other chat's session to that chat (`c:` + platform + chat id); sessions without a
chat (the operator's CLI, the demo) have none. The platform is length-prefixed so no id can
make two scopes collide. `storage.types.SessionScope` builds the same keys in Python.

Titles were unique across the whole profile, so naming a session could reveal that someone
else had a session of that name; they are now unique within a scope. History is untouched.
"""

SQL = """
ALTER TABLE sessions ADD COLUMN scope_key TEXT GENERATED ALWAYS AS (
    CASE
        WHEN chat_type = 'dm' THEN 'u:' || length(source) || ':' || source || ':' || user_id
        ELSE 'c:' || length(source) || ':' || source || ':' || chat_id
    END
) VIRTUAL;
DROP INDEX idx_sessions_title;
CREATE UNIQUE INDEX idx_sessions_scope_title ON sessions(COALESCE(scope_key, ''), title)
    WHERE title IS NOT NULL;
CREATE INDEX idx_sessions_scope ON sessions(scope_key, started_at DESC)
    WHERE scope_key IS NOT NULL;
"""

#: PostgreSQL has stored generated columns only (computed once per row write).
POSTGRES = """
ALTER TABLE sessions ADD COLUMN scope_key TEXT GENERATED ALWAYS AS (
    CASE
        WHEN chat_type = 'dm'
            THEN 'u:' || length(source)::text || ':' || source || ':' || user_id
        ELSE 'c:' || length(source)::text || ':' || source || ':' || chat_id
    END
) STORED;
DROP INDEX idx_sessions_title;
CREATE UNIQUE INDEX idx_sessions_scope_title ON sessions(COALESCE(scope_key, ''), title)
    WHERE title IS NOT NULL;
CREATE INDEX idx_sessions_scope ON sessions(scope_key, started_at DESC)
    WHERE scope_key IS NOT NULL;
"""
