"""The migration runner both SQL backends use (STYLE "Shape": numbered, append-only lists).

A backend brings its list of ``(version, name, script)``, how to run one script
and how to read its driver's errors; the steps are the same everywhere: the
``schema_migrations`` ledger, refusing a database newer than this Noema, and
applying and recording, in order, each migration it has not recorded. The
backend holds the transaction (and any lock) around ``Migrator.run``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from noema.errors import MigrationError

__all__ = ["Migration", "Migrator", "refuse_newer"]

#: ``(version, name, script)``; versions count up from 1.
Migration = tuple[int, str, str]


class Migrator(ABC):
    """One backend's way to run the shared migration steps on one connection."""

    #: ``CREATE TABLE IF NOT EXISTS schema_migrations (...)`` in the backend's types.
    ledger: ClassVar[str]
    #: ``INSERT INTO schema_migrations (version, name, applied_at) ...`` of one migration.
    record: ClassVar[str]

    def __init__(self, database: str) -> None:
        #: The database as messages name it (never with a password).
        self.database = database

    @abstractmethod
    def rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement; the rows it returns (none for a statement that returns none)."""

    @abstractmethod
    def apply(self, script: str) -> None:
        """Run one migration's script."""

    @abstractmethod
    def cause(self, exc: Exception) -> str | None:
        """``exc`` in one line when the driver raised it, else ``None``."""

    def run(self, migrations: Sequence[Migration]) -> None:
        """Apply and record, in order, the migrations the database has not recorded."""
        self.rows(self.ledger)
        applied = {int(r[0]) for r in self.rows("SELECT version FROM schema_migrations")}
        known = {version for version, _, _ in migrations}
        refuse_newer(self.database, applied, known)
        for version, name, script in migrations:
            if version in applied:
                continue
            try:
                self.apply(script)
            except Exception as exc:
                cause = self.cause(exc)
                if cause is None:
                    raise
                raise MigrationError(
                    f"migration {version} ({name}) failed on {self.database}: {cause}"
                ) from exc
            self.rows(self.record, (version, name))


def refuse_newer(database: str, applied: set[int], known: set[int]) -> None:
    """Refuse a database that recorded migrations this Noema does not know.

    Raises:
        MigrationError: ``applied`` holds a version ``known`` does not.
    """
    if applied - known:
        raise MigrationError(
            f"database {database} has schema version {max(applied)}, "
            f"newer than this Noema knows ({max(known)}); upgrade Noema"
        )
