"""Storage backends behind one protocol. ``open_storage(url)`` picks one by URL."""

from __future__ import annotations

from noema.errors import ConfigError
from noema.storage.base import Session, Storage

__all__ = ["Session", "Storage", "open_storage"]


def open_storage(url: str, *, read_only: bool = False) -> Storage:
    """Open (creating and migrating as needed) the store at ``url``.

    ``sqlite:///relative.db``, ``sqlite:////absolute.db``, ``sqlite:///:memory:`` or a
    bare file path select SQLite, with no parameters (``?mode=ro`` or a ``file:`` URI
    is a ``ConfigError``, never part of a file name); ``postgresql://`` (or
    ``postgres://``) selects PostgreSQL, with pool and index settings in the query
    string (ADR 0009).

    ``read_only=True`` opens a store as federation reads a peer's (ADR 0033): only a
    Noema store that exists, at exactly this Noema's schema; nothing is created,
    migrated or written (the database itself refuses writes). Anything else is one
    ``ConfigError``, the same whether a SQLite path is missing, a directory,
    unreadable or not a Noema store.
    """
    scheme, sep, _ = url.partition("://")
    if not sep or scheme == "sqlite":
        from noema.storage.sqlite import SQLiteStorage

        return SQLiteStorage(url, read_only=read_only)
    if scheme in {"postgresql", "postgres"}:
        from noema.storage.postgres import PostgresStorage

        return PostgresStorage(url, read_only=read_only)
    raise ConfigError(
        f"unsupported database URL scheme {scheme!r} (use sqlite:///PATH or postgresql://...)"
    )
