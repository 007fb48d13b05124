"""The one exception tree of Noema, and the warnings beside it.

    NoemaError
    ├── UsageError (ValueError)           a caller's mistake; the CLI exits 2
    │   ├── InvalidInput                  bad field, date, enum value, query, file line
    │   ├── PolicyViolation               the write policy refused the memory
    │   ├── NotFound (KeyError)           no such memory, relationship or proposal in this mind
    │   ├── CrossMindError                an edge or lookup that would join two minds
    │   ├── TemporalOrderError            causes/precedes against the timestamps
    │   ├── ConfigError                   bad configuration or database URL
    │   └── Forbidden                     the caller may not do this (a server's rules)
    └── RuntimeFailure (RuntimeError)     the system failed; the CLI exits 1
        ├── StorageError                  the database failed (translated from the driver)
        ├── MigrationError                the schema could not be brought up to date
        └── IntegrityError                the audit chain or a content hash does not verify

    NoemaWarning (UserWarning)            something degraded; the call still answered
    └── PeerUnavailable                   a peer of a federated recall could not be read

Driver exceptions are translated at the storage boundary with ``raise ... from exc``.
A ``UsageError`` may name the input field it is about (``error.field``: ``"content"``,
``"importance"``, ``"filters.tags"``), so a form routes it without reading its text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only annotated: ``noema --help`` imports this module, not pydantic
    from pydantic import ValidationError

__all__ = [
    "ConfigError",
    "Conflict",
    "CrossMindError",
    "Forbidden",
    "IntegrityError",
    "InvalidInput",
    "MigrationError",
    "NoemaError",
    "NoemaWarning",
    "NotFound",
    "PeerUnavailable",
    "PolicyViolation",
    "RuntimeFailure",
    "StorageError",
    "TemporalOrderError",
    "UsageError",
    "from_validation",
]


class NoemaError(Exception):
    """Root of every error Noema raises on purpose."""


class UsageError(NoemaError, ValueError):
    """The caller asked for something that cannot be done as asked.

    Attributes:
        field: the input field the error is about, when it is about one field
            (dotted for nested ones, e.g. ``"filters.tags"``); else ``None``.
    """

    def __init__(self, message: str = "", *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class InvalidInput(UsageError):
    """A value failed validation; the message names the field."""


class Conflict(InvalidInput):
    """The record's state does not allow the change (e.g. retracting a retracted memory)."""


class PolicyViolation(UsageError):
    """The write policy refused a memory (for example, confidence below the threshold)."""


class NotFound(UsageError, KeyError):
    """No such record in this mind."""

    def __str__(self) -> str:  # KeyError quotes its message; we do not.
        return str(self.args[0]) if self.args else "not found"


class CrossMindError(UsageError):
    """An operation would join or read across two minds."""


class TemporalOrderError(UsageError):
    """An ordering edge (causes, precedes) contradicts the memories' timestamps."""


class ConfigError(UsageError):
    """The configuration or the database URL is wrong."""


class Forbidden(UsageError):
    """The caller may not do this: a server's rules refuse it (``noema.access``)."""


class RuntimeFailure(NoemaError, RuntimeError):
    """Something failed that the caller did not cause."""


class StorageError(RuntimeFailure):
    """The database failed."""


class MigrationError(RuntimeFailure):
    """The schema could not be migrated."""


class IntegrityError(RuntimeFailure):
    """Stored data does not verify against the audit chain or its content hash."""


class NoemaWarning(UserWarning):
    """Root of every warning Noema issues: the call went on, with less than it could have."""


class PeerUnavailable(NoemaWarning):
    """A peer of a federated recall could not be opened or read; its results are missing.

    Attributes:
        peer: the subscription's name (``a/b`` for a peer reached through peer ``a``).
        mind: the peer mind's name.
        url: the peer's store (``None``: the subscriber's own).
        reason: what went wrong, in one line.
    """

    def __init__(self, peer: str, mind: str, url: str | None, reason: str) -> None:
        super().__init__(f"peer {peer} unavailable: {reason}")
        self.peer = peer
        self.mind = mind
        self.url = url
        self.reason = reason


def from_validation(exc: ValidationError, *, what: str = "") -> InvalidInput:
    """One-line InvalidInput naming the first failing field of a pydantic error."""
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    label = f"{what} " if what else ""
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    if field:
        return InvalidInput(f"{label}{field}: {message}{more}", field=field)
    return InvalidInput(f"{label}{message}{more}".strip())
