"""Schema v10: finals found by the message they reply to; a chat's open approvals.

With replicas, the replica holding an HTTP API request whose session another replica owns
reads the outbox for the final that replies to that request (`outbox_reply_for`, followed by
`gateway.replicas.relay.ReplyRelay`). Delivered rows are outside the open-rows index, so
the lookup gets its own index. `/approve` on a replica other than the one whose turn waits
reads the chat's pending approvals (`approvals_pending_in`): a partial index of those.
Nothing else changes.
"""

SQL = """
CREATE INDEX idx_outbox_reply ON outbox(reply_to, created_at);
CREATE INDEX idx_approvals_pending ON approvals(platform, chat_id, created_at)
    WHERE status = 'pending';
"""

POSTGRES = SQL
