"""Schema v6: a held event is claimed by the process that hands it to a session.

`claimed_by` names the boot (one gateway process lifetime) whose session took the event: the
live path claims an event in the same statement that holds it, and start-up recovery claims
only rows no session of its own boot has taken, in one transaction. So the live path and
recovery can never both take one event (the restart race of issue 15). Releasing an event
clears its claim with its hold.

The dedup record of an event carries the same claim from the moment it is recorded until the
event's fate is stored (its hold, or `inbound_settle` for a dropped event or a command): a
record still claimed by a dead boot and not held was cut off between the record and its hold,
and the platform's redelivery of it counts as new once more instead of as a repeat.

The outbox gets the same column: a final reply is claimed by the boot that records it, and
start-up recovery re-sends only finals no part of its own boot recorded, claiming them in one
transaction, so a reply being sent live is never re-sent by recovery as well.
"""

SQL = """
ALTER TABLE inbound_events ADD COLUMN claimed_by TEXT;
ALTER TABLE outbox ADD COLUMN claimed_by TEXT;
"""
