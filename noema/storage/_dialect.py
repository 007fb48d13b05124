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
    """WHERE fragments (each starting with AND) for memories aliased ``m``."""
    mark = dialect.mark
    parts: list[str] = []
    if filters is not None:
        for column, values in (
            ("status", filters.statuses),
            ("kind", filters.kinds),
            ("epistemic", filters.epistemics),
            ("channel", filters.channels),
        ):
            if values:
                parts.append(
                    "AND " + dialect.any_of(f"m.{column}", [v.value for v in values], params)
                )
        if len(filters.lifecycles) < len(Lifecycle):
            parts.append(
                "AND "
                + dialect.any_of("m.lifecycle", [c.value for c in filters.lifecycles], params)
            )
        for tag in filters.tags:
            parts.append(f"AND {dialect.has_tag}")
            params.append(tag)
        for test, value in (
            (f"m.key = {mark}", filters.key),
            (
                f"m.recorded_at >= {mark}",
                None if filters.since is None else to_micros(filters.since),
            ),
            (
                f"m.recorded_at <= {mark}",
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
    if as_of is not None:
        t = to_micros(as_of)
        parts.append(f"AND m.valid_from <= {mark} AND (m.valid_to IS NULL OR m.valid_to > {mark})")
        params.extend((t, t))
    return " ".join(parts)


def chunks(values: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    """``values`` in slices of at most ``size``."""
    for start in range(0, len(values), size):
        yield values[start : start + size]
