"""Storage backends behind one protocol. ``open_storage(url)`` picks one by URL."""

from __future__ import annotations

from noema.errors import ConfigError
from noema.storage.base import Session, Storage

__all__ = ["Session", "Storage", "open_storage"]


def open_storage(url: str, *, create: bool = True) -> Storage:
    """Open (and migrate) the store at ``url``.

    ``sqlite:///relative.db``, ``sqlite:////absolute.db``, ``sqlite:///:memory:`` or a
    bare file path select SQLite, with no parameters (``?mode=ro`` or a ``file:`` URI
    is a ``ConfigError``, never part of a file name); ``postgresql://`` (or
    ``postgres://``) selects PostgreSQL, with pool and index settings in the query
    string (ADR 0009).
    ``create=False`` opens only a store that exists (a peer's): a SQLite file that
    is not there is a ``ConfigError``, not a new empty database.
    """
    scheme, sep, _ = url.partition("://")
    if not sep or scheme == "sqlite":
        from noema.storage.sqlite import SQLiteStorage, missing_file

        if not create and (missing := missing_file(url)):
            raise ConfigError(f"no SQLite database at {missing}")
        return SQLiteStorage(url)
    if scheme in {"postgresql", "postgres"}:
        from noema.storage.postgres import PostgresStorage

        return PostgresStorage(url)
    raise ConfigError(
        f"unsupported database URL scheme {scheme!r} (use sqlite:///PATH or postgresql://...)"
    )
