"""Shared fixtures. Every storage-touching test runs on every backend via ``backend``.

Only SQLite exists today; the PostgreSQL backend adds a param here (marked so a
machine without a server skips it with a reason) and the whole suite runs on it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from noema import ManualClock, Mind

BACKENDS = [pytest.param("sqlite", id="sqlite")]
START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


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


@pytest.fixture
def store_url(backend: str, tmp_path: Path) -> str:
    """A fresh, empty database of the backend under test."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'noema.db'}"
    raise AssertionError(f"unknown backend {backend}")


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
