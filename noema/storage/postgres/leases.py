"""Job leases on PostgreSQL: the lease row, as on SQLite, guarded by an advisory lock.

The store holds a session-level advisory lock per lease name, on a connection
of its own, for as long as one of its runtimes holds the lease. Another store
cannot get it, so two processes never run the job at once even if a lease row
outlives its expiry. When the advisory lock is free, no live process holds the
lease (a crashed runtime's connection released it with the crash), so the row
is taken over at once.
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg

from noema.storage import _sql, ops
from noema.storage.postgres.options import lock_key

__all__ = ["Leases", "acquire_lease", "release_lease"]


def _key(name: str) -> int:
    return lock_key(f"noema:lease:{name}")


class Leases:
    """Session-level advisory locks of one store, on one connection of its own."""

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._held: set[str] = set()

    def holds(self, name: str) -> bool:
        """Whether this store holds the lock (then the lease row decides, as on SQLite)."""
        with self._lock:
            return name in self._held

    def take(self, name: str) -> bool:
        """Try lease ``name``'s advisory lock without waiting; whether this store now holds it."""
        with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = psycopg.connect(self._conninfo, autocommit=True)
                self._held.clear()
            row = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (_key(name),)).fetchone()
            if not (row and row[0]):
                return False
            self._held.add(name)
            return True

    def give_back(self, name: str) -> None:
        """Release the advisory lock of lease ``name``, if this store holds it."""
        with self._lock:
            if name in self._held and self._conn is not None and not self._conn.closed:
                self._conn.execute("SELECT pg_advisory_unlock(%s)", (_key(name),))
            self._held.discard(name)

    def close(self) -> None:
        """Close the lock connection, which releases every advisory lock this store holds."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            self._held.clear()


def acquire_lease(s: _sql.SqlSession, leases: Leases, op: ops.AcquireLease) -> bool:
    """Take the lease's advisory lock, then its row (taken over if the lock was free)."""
    held = leases.holds(op.name)
    if not held and not leases.take(op.name):
        return False  # another live store holds it
    return _sql.state.acquire_lease(s, op, take_over=not held)


def release_lease(s: _sql.SqlSession, leases: Leases, op: ops.ReleaseLease) -> None:
    """Delete the lease row if ``op.holder`` holds it, then release its advisory lock."""
    if _sql.state.drop_lease(s, op):
        leases.give_back(op.name)
