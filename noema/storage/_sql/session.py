"""The session both SQL backends build on, and the small helpers their shared handlers use.

A backend's session runs an operation through its handler table: the guard (a
read session refuses a write op) runs before anything else, and driver errors
become Noema's in one place. The handlers see the session's small cursor API
(``all``, ``one``, ``execute``, ``many``, ``append``, ``memories_where``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, ClassVar, TypeVar, cast

from concepts import Memory
from noema.errors import InvalidInput, StorageError
from noema.storage import ops
from noema.storage._dialect import Dialect, chunks

__all__ = ["Handler", "SqlSession", "mind_rows", "optional", "select_among"]

R = TypeVar("R")

#: A handler: ``(session, op) -> the op's result``.
Handler = Callable[[Any, Any], Any]


class SqlSession(ABC):
    """One transaction on one connection, as the handlers see it."""

    dialect: ClassVar[Dialect]

    def __init__(self, write: bool, handlers: Mapping[type[Any], Handler]) -> None:
        self.write = write
        self._handlers = handlers

    def run(self, op: ops.Op[R]) -> R:
        """Run ``op`` through its handler; a read session refuses a write op before anything."""
        handler = self._handlers.get(type(op))
        if handler is None:
            raise TypeError(f"{self.dialect.name} backend has no handler for {type(op).__name__}")
        if not self.write and type(op) in ops.WRITE_OPS:
            raise TypeError(f"{type(op).__name__} needs a write transaction")
        try:
            self.prepare(op)
            return cast(R, handler(self, op))
        except UnicodeEncodeError:
            # Text no model checked (an id, a name) that cannot be stored as UTF-8.
            raise InvalidInput("text is not valid Unicode (it holds a lone surrogate)") from None
        except Exception as exc:
            problem = self.problem(exc)
            if problem is None:
                raise
            if isinstance(problem, InvalidInput):
                raise problem from None
            raise StorageError(
                f"{self.dialect.name} failed on {type(op).__name__}: {problem}"
            ) from exc

    def submit(self, op: ops.Op[R]) -> Future[R]:
        """Run ``op`` now (a backend that can run it beside the caller overrides this)."""
        future: Future[R] = Future()
        try:
            future.set_result(self.run(op))
        except Exception as exc:
            future.set_exception(exc)
        return future

    def prepare(self, op: ops.Op[Any]) -> None:  # noqa: B027 - a hook, empty by default
        """Runs before each handler of this session (after the guard)."""

    @abstractmethod
    def problem(self, exc: Exception) -> InvalidInput | str | None:
        """What an exception ``exc`` raised by a handler means.

        Returns:
            The caller's input at fault (an ``InvalidInput``, raised as it is), the
            store failing (a one-line cause, raised as a ``StorageError``), or
            neither (``None``: ``exc`` propagates unchanged).
        """

    # The cursor API the shared handlers use.

    @abstractmethod
    def all(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def one(self, query: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None: ...

    @abstractmethod
    def execute(self, query: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; how many rows it changed."""

    @abstractmethod
    def many(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement per row of parameters."""

    @abstractmethod
    def append(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert ``rows`` of ``columns`` into ``table``, the fastest way the backend has."""

    @abstractmethod
    def memories_where(
        self, mind_id: str, column: str, values: Sequence[str], *, active: bool
    ) -> list[Memory]:
        """The mind's memories whose ``column`` is one of ``values`` (``active``: active ones)."""


def optional(s: SqlSession, sql: str, value: Any, params: list[Any]) -> str:
    """``sql`` and a placeholder for ``value`` (appended to ``params``); nothing for ``None``."""
    if value is None:
        return ""
    params.append(value)
    return f"{sql} {s.dialect.mark}"


def select_among(
    s: SqlSession, query: str, params: Sequence[Any], column: str, values: Sequence[Any]
) -> list[tuple[Any, ...]]:
    """The rows of ``query`` (ending in ``AND``) whose ``column`` is one of ``values``.

    ``values`` are read a chunk at a time, each chunk after ``params``.
    """
    rows: list[tuple[Any, ...]] = []
    for chunk in chunks(values):
        among = list(params)
        rows += s.all(query + s.dialect.any_of(column, chunk, among), among)
    return rows


def mind_rows(
    s: SqlSession, table: str, columns: Sequence[str], mind_id: str, order: str
) -> list[tuple[Any, ...]]:
    """Every row of one mind in ``table``: its ``columns``, in ``order``."""
    return s.all(
        f"SELECT {', '.join(columns)} FROM {table} WHERE mind_id = {s.dialect.mark} "
        f"ORDER BY {order}",
        (mind_id,),
    )
