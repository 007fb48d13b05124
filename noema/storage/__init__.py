"""Storage backends behind one protocol. ``open_storage(url)`` picks one by URL."""

from __future__ import annotations

from noema.errors import ConfigError
from noema.storage.base import Session, Storage

__all__ = ["Session", "Storage", "open_storage"]


def open_storage(url: str) -> Storage:
    """Open (and migrate) the store at ``url``.

    ``sqlite:///relative.db``, ``sqlite:////absolute.db``, ``sqlite:///:memory:`` or a
    bare file path select SQLite. PostgreSQL URLs are recognised but arrive with
    the PostgreSQL backend.
    """
    scheme, sep, _ = url.partition("://")
    if not sep or scheme == "sqlite":
        from noema.storage.sqlite import SQLiteStorage

        return SQLiteStorage(url)
    if scheme in {"postgresql", "postgres"}:
        raise ConfigError("the PostgreSQL backend is not available in this version of Noema")
    raise ConfigError(f"unsupported database URL scheme {scheme!r} (use sqlite:///PATH)")
