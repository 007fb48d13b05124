"""Full-text search on PostgreSQL: ``tsvector`` columns under GIN, ranked by BM25 as FTS5 ranks.

A stored ``tsvector`` column (configuration ``noema``: English stemming, no
stop words) under a GIN index; an estimate of BM25 picks the best matches and BM25,
computed as SQLite's FTS5 computes it, orders them, with each mind's own
statistics (``text_stats`` per mind, document counts within the mind), so one
mind's writes never move another's scores. The derived ``keys`` have their own
column, ``keys_tsv``, searched the same way over their own statistics. The
write operations keep ``text_stats`` in step (``count_new``, ``recount_keys``,
``uncount``).
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

import psycopg

from concepts import Memory
from noema.storage import ops
from noema.storage._dialect import POSTGRES, filter_sql
from noema.storage._rows import MEMORY_SELECT, memory_from_row

__all__ = [
    "WordStats",
    "bm25",
    "count_new",
    "recount_keys",
    "search_text",
    "token_count",
    "uncount",
]


class _Store(Protocol):
    @property
    def words(self) -> WordStats: ...


class Session(Protocol):
    """What the text handlers use of a PostgreSQL session (``store.Session``)."""

    @property
    def store(self) -> _Store:
        """The store the session belongs to."""
        ...

    @property
    def cur(self) -> psycopg.Cursor[Any]:
        """The session's cursor."""
        ...

    def all(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row ``query`` returns."""
        ...

    def execute(self, query: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; how many rows it changed."""
        ...

    def many(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement per row of parameters."""
        ...

    def memories_by_seq(self, mind_id: str, seqs: Sequence[int]) -> dict[int, Memory]:
        """The mind's memories by their ``seq``."""
        ...


#: A word in at least this many memories is "common" (SQLite also counts 2% of
#: the table; here the cut stays at 2,000, so no query ranks more matches than that).
COMMON_DOCS = 2_000
#: The same cut for the expanded keys, whose words repeat across memories by
#: construction (a year, a month, a speaker's name): SQLite's ``KEYS_COMMON_MIN_DOCS``.
KEYS_COMMON_DOCS = 200
#: How long the table's word statistics are trusted before they are read again.
STATS_SECONDS = 60.0
#: Matches picked by their estimated BM25 before the best are scored exactly.
RERANK_MIN = 200
#: Query words matching at least 1 / WIDE_SHARE of the mind's memories make a search
#: wide: the planner may then price a sequential scan below the GIN index. Below
#: WIDE_MIN_DOCS memories such a scan costs about what the two statements that
#: rule it out do.
WIDE_SHARE = 50
WIDE_MIN_DOCS = 2_000
#: pi ** 2 / 6, the sum ``ts_rank`` divides a term's occurrences by.
_ZETA2 = math.pi**2 / 6

#: The full-text index of each ``SearchText.field``: the ``tsvector`` column of
#: memories and its total of tokens in ``text_stats`` (documents are shared).
_TEXT_INDEXES = {"content": ("tsv", "tokens"), "keys": ("keys_tsv", "keys_tokens")}
#: The memories a word of each ``tsvector`` column must be in to be common.
_COMMON = {"tsv": COMMON_DOCS, "keys_tsv": KEYS_COMMON_DOCS}

#: A token as SQLite's unicode61 tokenizer (and PostgreSQL's parser after
#: ``noema_words``) sees one: a run of letters and digits.
_TOKEN = re.compile(r"[^\W_]+")


def token_count(text: str) -> int:
    """How many tokens BM25 counts in ``text`` (for the corpus's average length)."""
    return len(_TOKEN.findall(text))


def bm25(
    tsv: str, phrases: Sequence[Sequence[str]], idfs: Sequence[float], average: float
) -> float:
    """Okapi BM25 of a document (its ``tsvector`` as text) as SQLite's FTS5 computes it.

    k1 = 1.2, b = 0.75; a phrase's frequency is that of its rarest lexeme in the
    document; the document's length is its number of positions (tokens), and
    phrases are summed in query order, as FTS5 sums them. The text is read with
    string counts, not parsed: ``noema_words`` removed ASCII punctuation before
    the text was parsed, so quotes delimit lexemes and commas separate positions
    (a lexeme without positions counts once).
    """
    length = tsv.count(",") + tsv.count("'") // 2
    k = 1.2 * (0.25 + 0.75 * length / average)
    score = 0.0
    for words, idf in zip(phrases, idfs, strict=True):
        tf = min((_frequency(tsv, word) for word in words), default=0)
        if tf:
            score += idf * (tf * 2.2) / (tf + k)
    return score


def _frequency(tsv: str, lexeme: str) -> int:
    """How often ``lexeme`` occurs in a document, by its positions in the ``tsvector`` text."""
    quoted = f"'{lexeme}'"
    at = tsv.find(quoted)
    if at < 0:
        return 0
    at += len(quoted)
    if at == len(tsv) or tsv[at] != ":":
        return 1
    end = tsv.find(" ", at)
    return tsv.count(",", at, end if end >= 0 else len(tsv)) + 1


class WordStats:
    """Frequent lexemes of a ``tsvector`` column from the planner's statistics (``ANALYZE``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._read: dict[str, tuple[float, frozenset[str]]] = {}  # column -> (when, lexemes)

    def common(self, cur: psycopg.Cursor[Any], column: str) -> frozenset[str]:
        """The lexemes of ``column`` in at least its common count of memories, per ``pg_stats``.

        Read from the planner's statistics at most once per ``STATS_SECONDS``; empty
        until ``ANALYZE`` has gathered statistics of the column.
        """
        with self._lock:
            read_at, cached = self._read.get(column, (float("-inf"), frozenset()))
            if time.monotonic() - read_at < STATS_SECONDS:
                return cached
            row = cur.execute(
                "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples "
                "FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename "
                "AND c.relnamespace = to_regnamespace(s.schemaname) "
                "WHERE s.schemaname = current_schema() AND s.tablename = 'memories' "
                "AND s.attname = %s",
                (column,),
            ).fetchone()
            common: frozenset[str] = frozenset()
            if row is not None and row[0] is not None:
                elems, freqs, total = row
                common = frozenset(
                    e for e, f in zip(elems, freqs, strict=False) if f * total >= _COMMON[column]
                )
            self._read[column] = (time.monotonic(), common)
            return common


# ---------------------------------------------------------------- statistics upkeep


def count_new(s: Session, memories: Sequence[Memory]) -> None:
    """Add just-inserted memories to their minds' documents and tokens."""
    stats: dict[str, list[int]] = {}
    for memory in memories:
        counts = stats.setdefault(memory.mind_id, [0, 0, 0])
        counts[0] += 1
        counts[1] += token_count(memory.content)
        counts[2] += token_count(memory.keys)
    s.many(
        "INSERT INTO text_stats (mind_id, documents, tokens, keys_tokens) "
        "VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (mind_id) DO UPDATE SET documents = text_stats.documents "
        "+ excluded.documents, tokens = text_stats.tokens + excluded.tokens, "
        "keys_tokens = text_stats.keys_tokens + excluded.keys_tokens",
        [(mind_id, *counts) for mind_id, counts in stats.items()],
    )


def recount_keys(s: Session, mind_id: str, rekeyed: Sequence[tuple[str, str]]) -> None:
    """Follow ``(memory id, new keys)`` in the mind's token total of keys, before they are set.

    The generated ``keys_tsv`` follows by itself. The mind's lock is held, so
    the old keys read now are the ones replaced.
    """
    current: dict[str, str] = {
        r[0]: r[1]
        for r in s.all(
            "SELECT id, keys FROM memories WHERE mind_id = %s AND id = ANY(%s)",
            (mind_id, list(dict.fromkeys(i for i, _ in rekeyed))),
        )
    }
    delta = 0
    for memory_id, keys in rekeyed:
        if memory_id in current:
            delta += token_count(keys) - token_count(current[memory_id])
            current[memory_id] = keys
    if delta:
        s.execute(
            "UPDATE text_stats SET keys_tokens = greatest(keys_tokens + %s, 0) WHERE mind_id = %s",
            (delta, mind_id),
        )


def uncount(s: Session, mind_id: str, gone: Sequence[tuple[str, str]]) -> None:
    """Take deleted memories, as ``(content, keys)``, out of the mind's statistics."""
    if not gone:
        return
    s.execute(
        "UPDATE text_stats SET documents = greatest(documents - %s, 0), "
        "tokens = greatest(tokens - %s, 0), keys_tokens = greatest(keys_tokens - %s, 0) "
        "WHERE mind_id = %s",
        (
            len(gone),
            sum(token_count(content) for content, _ in gone),
            sum(token_count(keys) for _, keys in gone),
            mind_id,
        ),
    )


# ---------------------------------------------------------------- search


def _tsquery(terms: Sequence[str], strict: bool, params: list[Any]) -> str:
    """A tsquery matching any (or, when ``strict``, every) of ``terms``."""
    params.extend(terms)
    joiner = " && " if strict else " || "
    return "(" + joiner.join("plainto_tsquery('noema', noema_words(%s))" for _ in terms) + ")"


def _term_counts(
    s: Session, mind_id: str, terms: Sequence[str], column: str, tokens_column: str
) -> tuple[int, int, list[tuple[str, list[str], int]]]:
    """The mind's documents and tokens, and per term ``(term, lexemes, documents)``.

    Every count is the mind's own, so another mind's writes never move its
    scores. ``column`` is the ``tsvector`` searched, ``tokens_column`` its token
    total in ``text_stats``. Document counts stop at the column's common count. The
    planner's statistics cover the whole table: a term whose every lexeme they
    call common is taken as common without counting only while the mind holds
    every document. One statement for all of it.
    """
    common = sorted(s.store.words.common(s.cur, column))
    rows = s.all(
        "WITH stats AS (SELECT coalesce(sum(documents) FILTER (WHERE mind_id = %s), 0) "
        f"AS documents, coalesce(sum({tokens_column}) FILTER (WHERE mind_id = %s), 0) "
        "AS tokens, coalesce(sum(documents), 0) AS everyone FROM text_stats), "
        "words AS (SELECT i, t, coalesce((SELECT array_agg(lexeme) "
        "FROM unnest(to_tsvector('noema', noema_words(t)))), '{}') AS lexemes "
        "FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, i)) "
        "SELECT stats.documents, stats.tokens, w.t, w.lexemes, "
        "CASE WHEN w.lexemes <> '{}' AND w.lexemes <@ %s::text[] "
        "AND stats.everyone = stats.documents THEN %s ELSE "
        "(SELECT count(*) FROM (SELECT 1 FROM memories WHERE mind_id = %s "
        f"AND {column} @@ plainto_tsquery('noema', noema_words(w.t)) LIMIT %s) x) END "
        "FROM stats LEFT JOIN words w ON true ORDER BY w.i",
        (mind_id, mind_id, list(terms), common, _COMMON[column], mind_id, _COMMON[column]),
    )
    total, tokens = int(rows[0][0]), int(rows[0][1])
    return total, tokens, [(t, list(lexemes), int(n)) for _, _, t, lexemes, n in rows]


def _estimate(
    column: str,
    counted: Sequence[tuple[str, list[str], int]],
    idfs: Sequence[float],
    average: float,
) -> tuple[str, list[Any], str, list[Any]]:
    """SQL estimating each match's BM25, to pick the matches scored exactly.

    Returns a ``LATERAL`` subquery of each term's ``ts_rank`` (named ``r0``,
    ``r1``, ...; ``OFFSET 0`` computes each once a row) and the estimate over
    them, each with its parameters. ``ts_rank`` without normalisation gives a
    one-lexeme term ``0.1 * sum(1 / j**2 for j in 1..tf) / (pi**2 / 6)`` (every
    position weighs D, 0.1), so ``tf`` is about ``1 / (pi**2 / 6 - r * 10 * pi**2
    / 6) - 1/2``. The length is the document's lexemes rather than its tokens:
    the exact score orders what the estimate picked.
    """
    ranks = ", ".join(
        f"ts_rank(m.{column}, plainto_tsquery('noema', noema_words(%s)), 0) AS r{i}"
        for i in range(len(counted))
    )
    # BM25's term: idf * tf * 2.2 / (tf + k), k = 1.2 * (0.25 + 0.75 * length / average).
    k = f"(0.3::float8 + 0.9::float8 * length(m.{column}) / %s::float8)"
    terms = " + ".join(
        f"CASE WHEN r.r{i} > 0 THEN %s::float8 / (1 + {k} / "
        f"(1 / ({_ZETA2} - {10 * _ZETA2} * r.r{i}) - 0.5)) ELSE 0 END"
        for i in range(len(counted))
    )
    estimate_params: list[Any] = []
    for idf in idfs:
        estimate_params += [idf * 2.2, average]
    return (
        f"SELECT {ranks} OFFSET 0",
        [term for term, _, _ in counted],
        f"({terms})",
        estimate_params,
    )


def _any_match(s: Session, op: ops.SearchText, column: str) -> bool:
    """Whether a memory that passes ``op``'s filters holds every one of its words.

    One probe of the GIN index, which intersects the words' postings: most strict
    searches (write-time detection's, with a new memory's every word) match
    nothing, and the probe then spares the words' counts and the ranking, about
    4 ms of a single write at 10k. The planner would answer ``LIMIT 1`` by
    walking the mind's rows until one matches, all of them when none does (46 ms
    at 100k for two common words never said together), so the probe is kept to
    a bitmap scan of the index.
    """
    params: list[Any] = []
    query = _tsquery(op.terms, True, params)
    params.append(op.mind_id)
    where = filter_sql(POSTGRES, op.filters, op.as_of, params)
    s.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off")
    found = s.all(
        f"SELECT 1 FROM memories m WHERE m.{column} @@ {query} AND m.mind_id = %s {where} LIMIT 1",
        params,
    )
    s.execute("RESET enable_seqscan; RESET enable_indexscan")  # the settings the session had
    return bool(found)


def search_text(s: Session, op: ops.SearchText) -> list[tuple[Memory, float]]:
    """BM25 as SQLite computes it, over the matches whose estimated BM25 is best.

    Any-term queries drop common words when rarer ones remain; when every word is
    common, all are required and the newest matches come unranked (SQLite's plan).
    """
    if not op.terms:
        return []
    column, tokens_column = _TEXT_INDEXES[op.field]
    if op.strict and not _any_match(s, op, column):
        return []
    total, tokens, counted = _term_counts(s, op.mind_id, op.terms, column, tokens_column)
    if total == 0 or all(n == 0 for _, _, n in counted):  # no memory holds the words
        return []
    strict, ranked, floor = op.strict, True, _COMMON[column]
    if total > floor:
        common = {term for term, _, n in counted if n >= floor}
        rare = [c for c in counted if c[0] not in common]
        if common and rare and not strict:
            counted = rare
        elif common:
            strict, ranked = True, bool(rare)
    term_params: list[Any] = []
    query = _tsquery([term for term, _, _ in counted], strict, term_params)
    params: list[Any] = [*term_params, op.mind_id]
    where = filter_sql(POSTGRES, op.filters, op.as_of, params)
    if not ranked:
        rows = s.all(
            f"SELECT {MEMORY_SELECT}, 1.0::float8 FROM memories m "
            f"WHERE m.{column} @@ {query} AND m.mind_id = %s {where} "
            "ORDER BY m.seq DESC LIMIT %s",
            [*params, op.limit],
        )
        return [(memory_from_row(r[:-1]), float(r[-1])) for r in rows]
    idfs = [math.log((total - n + 0.5) / (n + 0.5)) for _, _, n in counted]
    idfs = [idf if idf > 0 else 1e-6 for idf in idfs]  # FTS5's floor
    average = tokens / total
    ranks, rank_params, estimate, estimate_params = _estimate(column, counted, idfs, average)
    # A wide search still reads its matches through the GIN index. The planner
    # prices a sequential scan close to it once a word is in a few percent of the
    # memories (more so while the index has a pending list), and that scan tests
    # every row's tsvector: 5.9 ms against 2.4 for a name in 978 of 10,000. A
    # failed statement aborts the transaction, whose rollback undoes the SET.
    wide = total > WIDE_MIN_DOCS and sum(n for _, _, n in counted) * WIDE_SHARE >= total
    if wide:
        s.execute("SET LOCAL enable_seqscan = off")
    hits = s.all(
        f"SELECT m.seq, m.{column}::text FROM memories m, LATERAL ({ranks}) r "
        f"WHERE m.{column} @@ {query} AND m.mind_id = %s {where} "
        f"ORDER BY {estimate} DESC, m.seq DESC LIMIT %s",
        [*rank_params, *params, *estimate_params, max(op.limit * 4, RERANK_MIN)],
    )
    if wide:
        s.execute("RESET enable_seqscan")  # the setting the session had
    scored = [
        (bm25(tsv, [words for _, words, _ in counted], idfs, average), int(seq))
        for seq, tsv in hits
    ]
    scored.sort(key=lambda pair: (-pair[0], -pair[1]))
    best = scored[: op.limit]
    found = s.memories_by_seq(op.mind_id, [seq for _, seq in best])
    return [(found[seq], score) for score, seq in best]
