"""Concurrent writers in separate processes on one mind (the PostgreSQL issue, item 4).

Runs on every backend: four processes write distinct memories (with vectors and
entity references) at once; nothing is lost or duplicated and the audit chain
stays one verifiable chain.
"""

from __future__ import annotations

from benchmarks.concurrency import run


def test_four_processes_writing_at_once_lose_and_duplicate_nothing(store_url: str) -> None:
    result = run(store_url, writers=4, count=300, batch=50)
    assert result["memories"] == result["expected"] == 1_200
    assert result["lost"] == 0 and result["duplicated"] == 0
    assert result["vectors"] == 1_200
    assert result["verify_ok"] and result["audit_entries"] == 1_200
    assert result["ok"]
