"""Schema v9 (numbered 9: 8 is another branch's): several gateway replicas on one database.

- `replicas`: one row per gateway process (boot) that ran the replica runtime: its id (host
  and boot), host, profile home, pid, when it started, its last heartbeat and until when
  that heartbeat counts (`expires_at`), a clean stop (`stopped_at`), the leader roles it
  holds and how many sessions it owns (for `/status`). A replica is *live* while it has not
  stopped and `expires_at` is in the future. Claims (`inbound_events.claimed_by`,
  `outbox.claimed_by`) name a replica id, so recovery leaves a live replica's claims alone.
- `session_leases`: which replica works a session (by routing key) and with which fencing
  token; the compression lease's shape (a token that only rises, an expiry, taken by one
  atomic upsert) plus `prev_holder`, the holder the row had when it was last taken: a lease
  taken from an expired holder (not released) is a takeover, and the new owner recovers
  the session's unfinished work. Rows are never deleted; release only clears the holder.
- `leader_leases`: the same shape per role (`telegram:<token hash>` long polling, Slack
  Socket Mode, the Discord gateway connection): the one replica that runs that intake.

Nothing here is read on SQLite: one process owns everything there. The tables exist on both
backends so the schema versions stay one list.
"""

SQL = """
CREATE TABLE replicas (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    home TEXT,
    pid INTEGER,
    started_at REAL NOT NULL,
    heartbeat_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    stopped_at REAL,
    roles TEXT NOT NULL DEFAULT '[]',
    sessions INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE session_leases (
    session_key TEXT PRIMARY KEY,
    holder TEXT,
    token INTEGER NOT NULL,
    prev_holder TEXT,
    acquired_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX idx_session_leases_holder ON session_leases(holder);
CREATE TABLE leader_leases (
    role TEXT PRIMARY KEY,
    holder TEXT,
    token INTEGER NOT NULL,
    acquired_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX idx_inbound_held_key ON inbound_events(session_key, held_seq)
    WHERE held IS NOT NULL;
"""

POSTGRES = """
CREATE TABLE replicas (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    home TEXT,
    pid INTEGER,
    started_at DOUBLE PRECISION NOT NULL,
    heartbeat_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    stopped_at DOUBLE PRECISION,
    roles TEXT NOT NULL DEFAULT '[]',
    sessions INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE session_leases (
    session_key TEXT PRIMARY KEY,
    holder TEXT,
    token BIGINT NOT NULL,
    prev_holder TEXT,
    acquired_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX idx_session_leases_holder ON session_leases(holder);
CREATE TABLE leader_leases (
    role TEXT PRIMARY KEY,
    holder TEXT,
    token BIGINT NOT NULL,
    acquired_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX idx_inbound_held_key ON inbound_events(session_key, held_seq)
    WHERE held IS NOT NULL;
"""
