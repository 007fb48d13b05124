"""The storage conformance suite runs on one backend more: PostgreSQL partitioned by mind.

``postgres-partitioned`` (pgvector, ``partitions=4``; ADR 0024) joins the root
``BACKENDS`` here only: partitioning changes where a mind's rows live, not what
any operation does, so this suite proves the partitioned schema and the rest of
the tests do not run a fourth time.
"""

from __future__ import annotations

import pytest
from conftest import BACKENDS

CONFORMANCE_BACKENDS = [
    *BACKENDS,
    pytest.param("postgres-partitioned", id="postgres-partitioned"),
]


@pytest.fixture(params=CONFORMANCE_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
