"""Full-text search on SQLite: FTS5 tables per mind, ranked by bm25.

Every mind has its own FTS5 table per indexed column (content and the derived
keys, ``memories_fts_N`` and ``memories_keys_fts_N`` for the mind's
``text_index`` N), so a mind's bm25 statistics (documents, lengths, term
counts) are its own: another mind's writes never move its scores. The tables
are external-content tables over ``memories``; the storage operations keep
them in step (see ``_sqlite_schema``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, NamedTuple

from concepts import Memory
from noema.storage import ops
from noema.storage._dialect import SQLITE, chunks, filter_sql
from noema.storage._rows import MEMORY_SELECT, memory_from_row

__all__ = [
    "TEXT_COLUMNS",
    "create_missing_text_indexes",
    "create_text_indexes",
    "index_new_rows",
    "index_rows",
    "merge_text_indexes",
    "search_text",
    "text_number",
]

#: The column of memories each ``SearchText.field`` indexes.
TEXT_COLUMNS = {"content": "content", "keys": "keys"}
_TOKENIZE = "porter unicode61 remove_diacritics 2"

#: A query word found in at least this many memories (or this share of them) is
#: "common": bm25 gives it almost no weight, yet ranking its matches costs ~2 µs each.
COMMON_MIN_DOCS = 2_000
COMMON_FRACTION = 0.02
#: The same floor for the expanded keys. Their words repeat across memories by
#: construction (a year, a month, a speaker's name, a topic), and a key shared by
#: this many memories picks no candidates a pool of 50 could use: ranking its
#: matches cost a query naming a person in a tenth of 10,000 memories 2 ms, and
#: LoCoMo found as much evidence with this floor as with content's (ADR 0032).
KEYS_COMMON_MIN_DOCS = 200


def _text_table(number: int, field: str) -> str:
    return f"memories_fts_{number}" if field == "content" else f"memories_keys_fts_{number}"


def text_number(conn: sqlite3.Connection, mind_id: str) -> int | None:
    """The number of the mind's full-text tables (None: no such mind)."""
    row = conn.execute("SELECT text_index FROM minds WHERE id = ?", (mind_id,)).fetchone()
    return None if row is None else int(row[0])


# ---------------------------------------------------------------- upkeep


def create_text_indexes(conn: sqlite3.Connection, mind_id: str, number: int) -> None:
    """The mind's full-text tables, filled from its memories (none for a new mind)."""
    for field, column in TEXT_COLUMNS.items():
        table = _text_table(number, field)
        conn.execute(
            f"CREATE VIRTUAL TABLE {table} USING fts5({column}, content = 'memories', "
            f"content_rowid = 'rowid', tokenize = '{_TOKENIZE}')"
        )
        conn.execute(
            f"INSERT INTO {table}(rowid, {column}) SELECT rowid, {column} FROM memories "
            "WHERE mind_id = ?",
            (mind_id,),
        )


def create_missing_text_indexes(conn: sqlite3.Connection) -> None:
    """Full-text tables for every mind that lacks them (minds of an older schema)."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for mind_id, number in conn.execute("SELECT id, text_index FROM minds").fetchall():
        if _text_table(number, "content") not in tables:
            create_text_indexes(conn, mind_id, number)


def index_new_rows(conn: sqlite3.Connection, mind_ids: Sequence[str], after_rowid: int) -> None:
    """Index the memories of ``mind_ids`` past ``after_rowid``: those just inserted."""
    for mind_id in mind_ids:
        number = text_number(conn, mind_id)
        if number is None:
            raise sqlite3.IntegrityError(f"no mind {mind_id}")
        for field, column in TEXT_COLUMNS.items():
            conn.execute(
                f"INSERT INTO {_text_table(number, field)}(rowid, {column}) "
                f"SELECT rowid, {column} FROM memories WHERE rowid > ? AND mind_id = ?",
                (after_rowid, mind_id),
            )


def index_rows(
    conn: sqlite3.Connection, mind_id: str, ids: Sequence[str], field: str, *, remove: bool
) -> None:
    """Put memories' current text of ``field`` into the mind's full-text table, or take it out.

    With ``remove`` the text is taken out: FTS5's ``delete`` needs the text as
    it was indexed, so that runs before the text changes.
    """
    number = text_number(conn, mind_id)
    if number is None:
        return
    table, column = _text_table(number, field), TEXT_COLUMNS[field]
    target, values = (
        (f"{table}({table}, rowid, {column})", f"'delete', rowid, {column}")
        if remove
        else (f"{table}(rowid, {column})", f"rowid, {column}")
    )
    for chunk in chunks(ids):
        conn.execute(
            f"INSERT INTO {target} SELECT {values} FROM memories "
            f"WHERE mind_id = ? AND id IN ({SQLITE.marks(len(chunk))})",
            (mind_id, *chunk),
        )


def merge_text_indexes(conn: sqlite3.Connection, mind_id: str) -> None:
    """Merge the mind's full-text segments, so none keeps the tokens of deleted rows."""
    number = text_number(conn, mind_id)
    if number is None:
        return
    for field in TEXT_COLUMNS:
        table = _text_table(number, field)
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")


# ---------------------------------------------------------------- search


def _fts_query(terms: Sequence[str], strict: bool) -> str:
    quoted = ['"' + term.replace('"', '""') + '"' for term in terms]
    return (" AND " if strict else " OR ").join(quoted)


def _documents(conn: sqlite3.Connection, table: str) -> int:
    """Rows of an FTS5 table, from the totals bm25 itself reads (no scan).

    FTS5 keeps them in its ``_data`` table, record 1: the row count first, as
    an SQLite varint.
    """
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0
    value = 0
    for index, byte in enumerate(bytes(row[0])[:9]):
        if index == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value


class _Match(NamedTuple):
    """How to search a table: the MATCH expression and whether bm25 ranks its rows.

    ``bound``: at most this many rows match (``None``: not known).
    """

    expression: str
    ranked: bool
    bound: int | None


def _common_floor(field: str) -> int:
    """Memories a word of ``field`` must be in to be common (at least; see ``_plan_match``)."""
    return KEYS_COMMON_MIN_DOCS if field == "keys" else COMMON_MIN_DOCS


def _plan_match(
    conn: sqlite3.Connection, table: str, terms: Sequence[str], strict: bool, floor: int
) -> _Match:
    """The MATCH expression to search ``table`` with, and whether to rank it by bm25.

    Any-term queries drop common words (in ``floor`` memories or more, or
    ``COMMON_FRACTION`` of them) when rarer ones remain. When every word is
    common, the search matches all of them and takes the newest matches unranked,
    so no query costs more than a few thousand rank computations. The words'
    counts, read to tell the common ones, also bound the rows the search can match.
    """
    total = _documents(conn, table)
    threshold = max(floor, int(total * COMMON_FRACTION))
    if total <= threshold:
        return _Match(_fts_query(terms, strict), True, None)
    counts = {
        term: conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)",
            (_fts_query([term], False), threshold),
        ).fetchone()[0]
        for term in terms
    }
    # A count under the threshold is exact; one at it means "at least".
    rare = [term for term in terms if counts[term] < threshold]
    if len(rare) == len(terms):
        exact = [counts[term] for term in terms]
        return _Match(_fts_query(terms, strict), True, min(exact) if strict else sum(exact))
    if rare and not strict:
        return _Match(_fts_query(rare, False), True, sum(counts[term] for term in rare))
    # Every word must match (all are common, or the search is strict): the rarest bounds it.
    bound = min((counts[term] for term in rare), default=None)
    return _Match(_fts_query(terms, True), bool(rare), bound)


def search_text(conn: sqlite3.Connection, op: ops.SearchText) -> list[tuple[Memory, float]]:
    if not op.terms:
        return []
    number = text_number(conn, op.mind_id)
    if number is None:
        return []
    table = _text_table(number, op.field)
    match, ranked, bound = _plan_match(conn, table, op.terms, op.strict, _common_floor(op.field))
    if bound == 0:  # no memory holds the words
        return []
    # Ranked: best bm25 first (FTS5 rank = bm25, lower is better). Unranked: newest first.
    order, score = ("rank", "-rank") if ranked else ("rowid DESC", "1.0")
    params: list[Any] = []
    where = filter_sql(SQLITE, op.filters, op.as_of, params)
    # Fast path: the best hits of the whole index, then filtered. FTS5 keeps
    # ORDER BY ... LIMIT cheap only without a join, so the join comes after.
    pool = max(op.limit * 4, 200)
    rows = conn.execute(
        f"WITH hits AS (SELECT rowid AS rid, {score} AS score FROM {table} "
        f"WHERE {table} MATCH ? ORDER BY {order} LIMIT ?) "
        f"SELECT {MEMORY_SELECT}, hits.score FROM hits JOIN memories m ON m.rowid = hits.rid "
        f"WHERE m.mind_id = ? {where} ORDER BY hits.score DESC, m.rowid DESC LIMIT ?",
        (match, pool, op.mind_id, *params, op.limit),
    ).fetchall()
    # Fewer than asked for: filters may have hidden hits, unless the fast path saw every one.
    if len(rows) < op.limit and (bound is None or bound > pool):
        total = conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)",
            (match, pool + 1),
        ).fetchone()[0]
        if total > pool:  # filters or other minds hid hits: search them all
            rows = conn.execute(
                f"SELECT {MEMORY_SELECT}, {score.replace('rank', f'{table}.rank')} "
                f"FROM {table} JOIN memories m ON m.rowid = {table}.rowid "
                f"WHERE {table} MATCH ? AND m.mind_id = ? {where} "
                f"ORDER BY {order.replace('rowid', f'{table}.rowid')} LIMIT ?",
                (match, op.mind_id, *params, op.limit),
            ).fetchall()
    return [(memory_from_row(r[:-1]), float(r[-1])) for r in rows]
