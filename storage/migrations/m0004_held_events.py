"""Schema v4: inbound events waiting in a session's mailbox are held durably.

An event accepted for a session is recorded here (its payload, the session key and its
place in line) until its user message is stored by the turn that takes it. A restart, or a
crash, no longer loses messages that were queued behind a running turn: start-up recovery
hands the held ones back to their sessions in order.
"""

SQL = """
ALTER TABLE inbound_events ADD COLUMN session_key TEXT;
ALTER TABLE inbound_events ADD COLUMN held TEXT;
ALTER TABLE inbound_events ADD COLUMN held_seq INTEGER;
CREATE INDEX idx_inbound_held ON inbound_events(held_seq) WHERE held IS NOT NULL;
"""

#: On PostgreSQL the place in line comes from a sequence: unique also when several processes
#: hold events at once.
POSTGRES = """
ALTER TABLE inbound_events ADD COLUMN session_key TEXT;
ALTER TABLE inbound_events ADD COLUMN held TEXT;
ALTER TABLE inbound_events ADD COLUMN held_seq BIGINT;
CREATE SEQUENCE inbound_held_seq OWNED BY inbound_events.held_seq;
CREATE INDEX idx_inbound_held ON inbound_events(held_seq) WHERE held IS NOT NULL;
"""
