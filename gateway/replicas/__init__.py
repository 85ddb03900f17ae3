"""Several gateway replicas on one PostgreSQL database (docs/scale-out.md): session
ownership by lease with handover of events, the heartbeat and sweep, leader leases for the
intakes that must run once."""

from gateway.replicas.runtime import ReplicaRuntime, new_replica_id, replica_for
from gateway.replicas.sessions import ReplicaSessions

__all__ = ["ReplicaRuntime", "ReplicaSessions", "new_replica_id", "replica_for"]
