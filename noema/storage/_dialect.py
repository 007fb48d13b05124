"""What tells the SQL of the two backends apart, and the SQL they write alike through it.

A ``Dialect`` names the few points where SQLite and PostgreSQL spell the same
query differently: the parameter placeholder, how a list of values is passed
(one ``?`` per value, or one array), how a memory's JSON tags are tested, and
how text sorts byte-wise. ``filter_sql`` writes the recall filters once for both.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from concepts import Lifecycle, RecallFilters
from noema.storage._rows import to_micros

__all__ = ["POSTGRES", "SQLITE", "Dialect", "chunks", "filter_sql"]

T = TypeVar("T")

#: Values per statement where a list becomes one placeholder per value.
CHUNK = 500


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one backend spells the parts of a query that differ."""

    #: The backend, as error messages name it.
    name: str
    #: A parameter placeholder.
    mark: str
    #: Lists travel as one array parameter (``= ANY(%s)``), not one placeholder per value.
    arrays: bool
    #: A test that the memory aliased ``m`` carries the tag given as one parameter.
    has_tag: str
    #: Follows a text column in ``ORDER BY`` to sort it byte-wise.
    bytewise: str

    def marks(self, n: int) -> str:
        """``n`` placeholders, comma-separated."""
        return ", ".join(self.mark for _ in range(n))

    def any_of(self, column: str, values: Sequence[Any], params: list[Any]) -> str:
        """A test that ``column`` is one of ``values`` (appended to ``params``)."""
        if self.arrays:
            params.append(list(values))
            return f"{column} = ANY({self.mark})"
        params.extend(values)
        return f"{column} IN ({self.marks(len(values))})"


SQLITE = Dialect(
    name="SQLite",
    mark="?",
    arrays=False,
    has_tag="EXISTS (SELECT 1 FROM json_each(m.tags) WHERE json_each.value = ?)",
    bytewise="",  # SQLite's default collation compares bytes
)
POSTGRES = Dialect(
    name="PostgreSQL",
    mark="%s",
    arrays=True,
    has_tag="m.tags::jsonb ? %s",
    bytewise=' COLLATE "C"',
)


def filter_sql(
    dialect: Dialect, filters: RecallFilters | None, as_of: datetime | None, params: list[Any]
) -> str:
    """WHERE fragments (each starting with AND) for memories aliased ``m``.

    With ``filters.known_at``, status, lifecycle and validity are tested on the
    state the memory had then: its row when it has not changed since, else the
    ``memory_history`` span that covers that instant.
    """
    mark = dialect.mark
    parts: list[str] = []
    known_at = filters.known_at if filters is not None else None
    if filters is not None:
        for column, values in (
            ("kind", filters.kinds),
            ("epistemic", filters.epistemics),
            ("channel", filters.channels),
        ):
            if values:
                parts.append(
                    "AND " + dialect.any_of(f"m.{column}", [v.value for v in values], params)
                )
        if filters.worlds:
            parts.append("AND " + dialect.any_of("m.world", list(filters.worlds), params))
        for tag in filters.tags:
            parts.append(f"AND {dialect.has_tag}")
            params.append(tag)
        for test, value in (
            (f"m.key = {mark}", filters.key),
            (
                f"m.valid_from >= {mark}",
                None if filters.since is None else to_micros(filters.since),
            ),
            (
                f"m.valid_from <= {mark}",
                None if filters.until is None else to_micros(filters.until),
            ),
            (
                f"m.confidence >= {mark}",
                filters.min_confidence if filters.min_confidence > 0 else None,
            ),
            (f"m.feedback_mean >= {mark}", filters.min_feedback),
        ):
            if value is not None:
                parts.append(f"AND {test}")
                params.append(value)
    if known_at is None:
        parts += _state_tests(dialect, "m", filters, as_of, params)
        return " ".join(parts)
    t = to_micros(known_at)
    parts.append(
        f"AND m.recorded_at <= {mark} AND ((COALESCE(m.changed_at, m.recorded_at) <= {mark}"
    )
    params.extend((t, t))
    parts += _state_tests(dialect, "m", filters, as_of, params)
    parts.append(
        ") OR EXISTS (SELECT 1 FROM memory_history h WHERE h.mind_id = m.mind_id"
        f" AND h.memory_id = m.id AND h.sys_from <= {mark} AND h.sys_to > {mark}"
    )
    params.extend((t, t))
    parts += _state_tests(dialect, "h", filters, as_of, params)
    parts.append("))")
    return " ".join(parts)


def _state_tests(
    dialect: Dialect,
    alias: str,
    filters: RecallFilters | None,
    as_of: datetime | None,
    params: list[Any],
) -> list[str]:
    """The tests of status, lifecycle and validity, on a memory row or a history span."""
    parts: list[str] = []
    if filters is not None:
        if filters.statuses:
            values = [v.value for v in filters.statuses]
            parts.append("AND " + dialect.any_of(f"{alias}.status", values, params))
        if len(filters.lifecycles) < len(Lifecycle):
            values = [c.value for c in filters.lifecycles]
            parts.append("AND " + dialect.any_of(f"{alias}.lifecycle", values, params))
    if as_of is not None:
        t = to_micros(as_of)
        mark = dialect.mark
        valid_to = f"{alias}.valid_to"
        parts.append(f"AND m.valid_from <= {mark} AND ({valid_to} IS NULL OR {valid_to} > {mark})")
        params.extend((t, t))
    return parts


def chunks(values: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    """``values`` in slices of at most ``size``."""
    for start in range(0, len(values), size):
        yield values[start : start + size]
