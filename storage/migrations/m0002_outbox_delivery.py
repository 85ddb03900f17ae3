"""Schema v2: what a recovered reply needs to be delivered like the original.

The outbox row now records the chat type (for the right rate budget), the streaming preview's
message id (so recovery edits the stale preview in place instead of leaving it beside the
reply) and the reply's attachments (so a recovered reply still carries them). An index on
session serves "does this turn already have a reply" at start-up.
"""

SQL = """
ALTER TABLE outbox ADD COLUMN chat_type TEXT;
ALTER TABLE outbox ADD COLUMN preview_message_id TEXT;
ALTER TABLE outbox ADD COLUMN attachments TEXT NOT NULL DEFAULT '[]';
CREATE INDEX idx_outbox_session ON outbox(session_id, created_at);
"""

POSTGRES = SQL  # the same statements on PostgreSQL
