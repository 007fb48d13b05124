"""The migration runner both SQL backends use (ADR 0002: numbered, append-only lists).

A backend brings its list of ``(version, name, script)``, how to run one script
and how to read its driver's errors; the steps are the same everywhere: the
``schema_migrations`` ledger, refusing a database newer than this Noema, and
applying and recording, in order, each migration it has not recorded. The
backend holds the transaction (and any lock) around ``Migrator.run``.

A store opened only to be read (a federation peer's) is never migrated:
``check_readable`` refuses it unless its schema is exactly this Noema's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from noema.errors import ConfigError, MigrationError

__all__ = ["Migration", "Migrator", "check_readable", "no_store", "refuse_newer"]

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


def no_store(shown: str) -> ConfigError:
    """The one error for a store opened to be read that is not a Noema store.

    A path that is missing, a directory, unreadable, or a file of something else
    all get it, so that a peer's URL cannot be used to tell them apart.
    """
    return ConfigError(f"no Noema store at {shown}", field="url")


def check_readable(shown: str, applied: set[int], known: set[int]) -> None:
    """Refuse to read a store whose recorded migrations are not exactly ``known``.

    Raises:
        ConfigError: nothing recorded (not a Noema store), or a schema older or
            newer than this Noema's.
    """
    if not applied:
        raise no_store(shown)
    if applied - known:
        raise ConfigError(
            f"the Noema store at {shown} has schema version {max(applied)}, newer than this "
            f"Noema reads ({max(known)}); upgrade Noema",
            field="url",
        )
    if known - applied:
        raise ConfigError(
            f"the Noema store at {shown} has schema version {max(applied)}, older than this "
            f"Noema reads ({max(known)}); open it once with this Noema to migrate it",
            field="url",
        )
