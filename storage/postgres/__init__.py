"""The PostgreSQL backend (`storage.backend: postgres`): the same ports as `StateStore`.

Needs the `postgres` extra (asyncpg). Nothing outside `storage/` imports from here except
the composition roots that open a store (`storage.open_store`).
"""

from storage.postgres.store import PostgresStore, prepare_postgres

__all__ = ["PostgresStore", "prepare_postgres"]
