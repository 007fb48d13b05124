"""Invariant 6: a crash (kill -9) at any point loses no committed memory, on every backend.

A child process writes batches of memories into one store and reports each batch
on stdout once ``remember_many`` has returned. The parent kills it with SIGKILL at
a random moment, many times over, on the same growing store. After every kill the
store must open, hold every reported batch whole, hold no batch in part, and
verify; on PostgreSQL the killed writer's connections must be gone and no advisory
lock left behind. The campaign is ``benchmarks.campaign_kills`` (its full run, 50
kills on SQLite and 20 on PostgreSQL, is in docs/benchmarks.md); CI runs a slice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.campaign_kills import BATCH, POSTGRES_OPTIONS, campaign

KILLS = {"sqlite": 20, "postgres": 8}


@pytest.mark.slow
@pytest.mark.parametrize("backend", list(KILLS))
def test_kill_9_loses_no_committed_batch_and_leaves_the_store_openable(
    backend: str, store_url: str, tmp_path: Path
) -> None:
    url = f"{store_url}&{POSTGRES_OPTIONS}" if backend == "postgres" else store_url
    result = campaign(url, KILLS[backend], tmp_path)
    assert result.problems == []
    assert not result.lost and not result.partial and not result.verify_failures
    assert result.kills == KILLS[backend]
    # The test must not pass vacuously: most runs were killed after writing something.
    assert sum(1 for n in result.reported.values() if n) >= KILLS[backend] // 2, result.reported
    assert result.memories >= result.batches * BATCH
