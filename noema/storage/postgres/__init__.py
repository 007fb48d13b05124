"""The PostgreSQL backend: psycopg 3 with a connection pool, tsvector + GIN, pgvector HNSW.

One database holds any number of minds and serves any number of processes
(ADR 0009). The package holds one idea per module:

- ``options``: Noema's settings in the URL's query string (``pool_min``,
  ``pool_max``, ``pool_timeout``, ``vectors`` (``auto`` or ``off``), ``hnsw_m``,
  ``hnsw_ef_construction``, ``hnsw_ef_search``, ``index_min_rows``,
  ``index_build_memory_mb``, ``partitions``; see ``PostgresOptions``), removed
  before the rest reaches libpq;
- ``text``: full-text search, BM25 as SQLite's FTS5 computes it over each
  mind's own statistics;
- ``vectors``: pgvector with an HNSW index per (model, dimensions), or float32
  bytes searched exactly; candidates are always scored exactly;
- ``leases``: job leases guarded by session advisory locks;
- ``schema``: the numbered migrations, applied on open, partitioned by mind
  when the store is created with ``partitions=N`` (ADR 0024);
- ``store``: the pool, the per-mind writer locks, the session and the store.

The handlers both SQL backends share live in ``noema.storage._sql``.
"""

from __future__ import annotations

from noema.storage.postgres.options import PostgresOptions, parse_url
from noema.storage.postgres.schema import MIGRATIONS
from noema.storage.postgres.store import PostgresStorage
from noema.storage.postgres.text import bm25, token_count

__all__ = ["MIGRATIONS", "PostgresOptions", "PostgresStorage", "bm25", "parse_url", "token_count"]
