"""The storage protocol every backend implements (ADR 0002)."""

from __future__ import annotations

from concurrent.futures import Future
from contextlib import AbstractContextManager
from typing import Protocol, TypeVar

from noema.storage.ops import Op

__all__ = ["Session", "Storage"]

R = TypeVar("R")


class Session(Protocol):
    """A unit of work inside one transaction."""

    def run(self, op: Op[R]) -> R:
        """Run one operation and return its declared result."""
        ...

    def submit(self, op: Op[R]) -> Future[R]:
        """Start a read operation the caller will want later; its result is ``run``'s.

        A backend may run it beside what the caller does next, in the session's
        snapshot, or at once (then the future is already done). The transaction
        waits for it before it ends.
        """
        ...


class Storage(Protocol):
    """A database holding any number of minds.

    ``transaction(write=True)`` serialises writers of one database and commits on
    a clean exit, rolls back on an exception. Read sessions see one snapshot.
    """

    url: str

    @property
    def concurrency(self) -> int:
        """How many transactions the store runs at once: the threads worth giving it."""
        ...

    def transaction(self, *, write: bool = True) -> AbstractContextManager[Session]:
        """A session inside one transaction; ``write=False`` opens a read session."""
        ...

    def schema_version(self) -> int:
        """The highest migration applied to the database."""
        ...

    def reclaim(self) -> None:
        """After a purge, outside any transaction: clear what the backend keeps of deleted rows."""
        ...

    def close(self) -> None:
        """Close the store: its connections and whatever else the backend holds open."""
        ...
