"""Schema v10: finals found by the message they reply to.

With replicas, the replica holding an HTTP API request whose session another replica owns
reads the outbox for the final that replies to that request (`outbox_reply_for`, followed by
`gateway.replicas.relay.ReplyRelay`). Delivered rows are outside the open-rows index, so
the lookup gets its own index. Nothing else changes.
"""

SQL = """
CREATE INDEX idx_outbox_reply ON outbox(reply_to, created_at);
"""

POSTGRES = SQL
