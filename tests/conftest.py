"""Shared fixtures. Every storage-touching test runs on every backend via ``backend``.

Backends: ``sqlite`` (a file in the test's temporary directory), ``postgres``
(pgvector) and ``postgres-novector`` (vectors as bytes, searched exactly); the
conformance suite adds ``postgres-partitioned`` (pgvector, ``partitions=4``). Each
PostgreSQL test module gets its own database, and each test a fresh schema in it.
The server is ``NOEMA_TEST_POSTGRES_URL`` (default: local, user postgres). Without
a server (or without pgvector) those tests skip with the reason, unless
``NOEMA_REQUIRE_POSTGRES=1``, which turns the skip into a failure.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import settings

from noema import ManualClock, Mind

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres"),
    pytest.param("postgres-novector", id="postgres-novector"),
]
START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

# No property test fails for the machine's speed: Hypothesis's default 200 ms deadline per
# example is a timing assertion, and the machines the suite runs on differ severalfold.
settings.register_profile("noema", deadline=None)
settings.load_profile("noema")


@pytest.fixture(autouse=True, scope="session")
def _no_default_embedder() -> Iterator[None]:
    """Tests choose their embedder: by default none, so results never hang on torch.

    Tests of embeddings pass one explicitly (``embedder=...`` or ``NOEMA_EMBEDDER``).
    """
    saved = os.environ.get("NOEMA_EMBEDDER")
    os.environ["NOEMA_EMBEDDER"] = "none"
    yield
    if saved is None:
        os.environ.pop("NOEMA_EMBEDDER", None)
    else:
        os.environ["NOEMA_EMBEDDER"] = saved


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class PostgresServer:
    """Databases for the PostgreSQL params: one per test module and variant, dropped at the end."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.base = self.url.rsplit("/", 1)[0]
        self.problem: str | None = None
        self.pgvector_problem: str | None = None
        self.databases: dict[tuple[str, str], str] = {}
        self.schemas = itertools.count(1)
        try:
            import psycopg

            with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                available = conn.execute(
                    "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
                ).fetchone()
        except Exception as exc:  # any failure to reach the server means: skip (or fail)
            self.problem = f"PostgreSQL not reachable at {self.url}: {str(exc).strip()[:120]}"
            return
        if not available:
            self.pgvector_problem = f"pgvector is not installed on the server at {self.url}"
        self._drop_leftovers()

    def _drop_leftovers(self) -> None:
        """Databases of earlier runs that were killed before they could drop them."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT datname FROM pg_database WHERE datname LIKE 'noema_test_%'"
                )
            ]
            for name in names:
                pid = int(name.split("_")[2])
                try:
                    os.kill(pid, 0)  # the run that made it is still going
                except ProcessLookupError:
                    conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
                except PermissionError:  # alive, another user's
                    pass

    def database(self, module: str, variant: str) -> str:
        import psycopg

        key = (module, variant)
        if key not in self.databases:
            name = f"noema_test_{os.getpid()}_{len(self.databases)}"
            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name}")
                conn.execute(f"CREATE DATABASE {name}")
            if variant != "postgres-novector":
                with psycopg.connect(f"{self.base}/{name}", autocommit=True) as conn:
                    conn.execute("CREATE EXTENSION vector")
            self.databases[key] = name
        return self.databases[key]

    def fresh_url(self, module: str, variant: str) -> str:
        """A URL whose tables land in a new, empty schema of the module's database."""
        import psycopg

        name = self.database(module, variant)
        schema = f"t{next(self.schemas)}"
        with psycopg.connect(f"{self.base}/{name}", autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        options = quote(f"-c search_path={schema},public", safe="")
        extra = {"postgres-novector": "&vectors=off", "postgres-partitioned": "&partitions=4"}.get(
            variant, ""
        )
        return f"{self.base}/{name}?options={options}{extra}"

    def drop_all(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            for name in self.databases.values():
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer(
        os.environ.get("NOEMA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    )
    yield server
    if server.databases:
        server.drop_all()


def _require(problem: str | None) -> None:
    if problem is None:
        return
    if os.environ.get("NOEMA_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"{problem} (NOEMA_REQUIRE_POSTGRES=1)")
    pytest.skip(problem)


@pytest.fixture
def store_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A fresh, empty database of the backend under test."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'noema.db'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    _require(server.problem)
    if backend != "postgres-novector":
        _require(server.pgvector_problem)
    return server.fresh_url(request.module.__name__, backend)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def open_mind(store_url: str, clock: ManualClock) -> Iterator[Callable[..., Mind]]:
    """Open minds on the store under test; all are closed after the test."""
    opened: list[Mind] = []

    def _open(name: str = "default", **kwargs: object) -> Mind:
        kwargs.setdefault("clock", clock)
        mind = Mind.open(store_url, name, **kwargs)  # type: ignore[arg-type]
        opened.append(mind)
        return mind

    yield _open
    for mind in opened:
        mind.close()


@pytest.fixture
def mind(open_mind: Callable[..., Mind]) -> Mind:
    """The mind ``default`` on a fresh store, with a manual clock at ``START``."""
    return open_mind()
