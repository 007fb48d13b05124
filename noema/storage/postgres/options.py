"""The URL of a PostgreSQL store and what comes with connecting to it.

Noema's own settings ride in the URL's query string and are removed before the
rest reaches libpq (``PostgresOptions``). Messages name the server without its
password (``redact``) and in one line (``first_line``); advisory lock keys are
hashed from prefixed names (``lock_key``).
"""

from __future__ import annotations

import hashlib
from typing import Literal
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from noema.errors import ConfigError

__all__ = [
    "MAX_PARTITIONS",
    "PostgresOptions",
    "first_line",
    "lock_key",
    "parse_url",
    "read_only_conninfo",
    "redact",
]


#: The most hash partitions a store may have: a query that names no mind (a few
#: statistics do) plans over every partition of its table.
MAX_PARTITIONS = 256


class PostgresOptions(BaseModel):
    """Pool and index settings, read from the URL's query string."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Connections the pool keeps open.
    pool_min: int = Field(default=1, ge=0, le=1_000)
    #: The most connections the pool opens (and transactions that run at once).
    pool_max: int = Field(default=10, ge=1, le=1_000)
    #: Seconds to wait for a free connection (and for the first one on open).
    pool_timeout: float = Field(default=30.0, gt=0, le=3_600)
    #: ``auto``: use pgvector when the extension is installed (or can be created);
    #: ``off``: store vectors as bytes and search them exactly. Decided once, when
    #: the schema is created.
    vectors: Literal["auto", "off"] = "auto"
    #: The HNSW index's links per node (pgvector's ``m``).
    hnsw_m: int = Field(default=16, ge=2, le=100)
    #: The candidate list while the HNSW index is built (``ef_construction``).
    hnsw_ef_construction: int = Field(default=64, ge=4, le=1_000)
    #: The least candidate list of an HNSW search (``hnsw.ef_search``); a search
    #: for more rows than this uses more.
    hnsw_ef_search: int = Field(default=64, ge=1, le=1_000)
    #: A (model, dimensions) with fewer vectors than this is searched exactly.
    index_min_rows: int = Field(default=5_000, ge=0)
    #: ``maintenance_work_mem`` for building an HNSW index: the build is much
    #: faster when the whole graph fits (about 1.6 GB per million 384-d vectors).
    index_build_memory_mb: int = Field(default=1_024, ge=64, le=1_048_576)
    #: Hash partitions by mind of every per-mind table (ADR 0024): ``0``, none; unset,
    #: whatever the store was created with (none for a new one). Decided once, when
    #: the schema is created: a store created otherwise is refused, never half-changed.
    partitions: int | None = Field(default=None, ge=0, le=MAX_PARTITIONS)


def parse_url(url: str) -> tuple[str, PostgresOptions]:
    """Split ``url`` into the libpq connection string and Noema's options."""
    if "\x00" in url:  # libpq would read the URL up to it
        raise ConfigError("database URL is not usable: it contains a NUL byte")
    try:
        parts = urlsplit(url)
        if "," not in parts.netloc:  # one host (libpq takes a list, which urllib cannot read)
            _ = parts.port  # a port out of range or not a number raises here
    except ValueError as exc:  # an unclosed IPv6 bracket, for one
        raise ConfigError(f"database URL is not usable: {exc}") from None
    ours: dict[str, str] = {}
    theirs: list[tuple[str, str]] = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name in PostgresOptions.model_fields:
            ours[name] = value
        else:
            theirs.append((name, value))
    try:
        options = PostgresOptions.model_validate(ours)
    except ValidationError as exc:
        problem = exc.errors()[0]
        field = ".".join(str(p) for p in problem["loc"])
        raise ConfigError(f"database URL option {field}: {problem['msg']}") from None
    if options.pool_min > options.pool_max:
        raise ConfigError("database URL options: pool_min is larger than pool_max")
    conninfo = urlunsplit(
        parts._replace(scheme="postgresql", query=urlencode(theirs, quote_via=quote))
    )
    return conninfo, options


def read_only_conninfo(conninfo: str) -> str:
    """``conninfo`` whose sessions run read-only transactions: the server refuses any write."""
    parts = urlsplit(conninfo)
    query = parse_qsl(parts.query, keep_blank_values=True)
    given = " ".join(value for name, value in query if name == "options")
    query = [(name, value) for name, value in query if name != "options"]
    query.append(("options", f"{given} -c default_transaction_read_only=on".strip()))
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


def redact(conninfo: str) -> str:
    """``conninfo`` with its password, if any, as ``***``."""
    parts = urlsplit(conninfo)
    if parts.password is None:
        return conninfo
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def first_line(exc: BaseException) -> str:
    """The first line of a driver's message (its type's name when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def lock_key(name: str) -> int:
    """A signed 64-bit advisory lock key for ``name``.

    Advisory lock keys live in one namespace per database: ours are hashed from
    a prefixed name (``noema:...``), so they will not meet another application's
    small integers.
    """
    return int.from_bytes(
        hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True
    )
