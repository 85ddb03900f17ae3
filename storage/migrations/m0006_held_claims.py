"""Schema v6: a held event is claimed by the process that hands it to a session.

`claimed_by` names the boot (one gateway process lifetime) whose session took the event: the
live path claims an event in the same statement that holds it, and start-up recovery claims
only rows no session of its own boot has taken, in one transaction. So the live path and
recovery can never both take one event (the restart race of issue 15). Releasing an event
clears its claim with its hold.
"""

SQL = """
ALTER TABLE inbound_events ADD COLUMN claimed_by TEXT;
"""
