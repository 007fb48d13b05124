"""Concurrent writers and readers in separate processes on one mind (the PostgreSQL issue, item 4).

Runs on every backend: four processes write distinct memories (with vectors and
entity references) at once while two more recall, peek and list events; nothing
is lost or duplicated, no reader sees an error (``database is locked`` or any
other), and the audit chain stays one verifiable chain.
"""

from __future__ import annotations

from benchmarks.concurrency import run


def test_four_writers_and_two_readers_at_once_lose_duplicate_and_fail_nothing(
    store_url: str,
) -> None:
    result = run(store_url, writers=4, count=300, batch=50, readers=2)
    assert result["memories"] == result["expected"] == 1_200
    assert result["lost"] == 0 and result["duplicated"] == 0
    assert result["vectors"] == 1_200
    assert [r["errors"] for r in result["reader_results"]] == [{}, {}]
    assert all(r["reads"] for r in result["reader_results"])
    # One entry per memory written, and one per reinforcing recall that found any.
    assert result["verify_ok"] and result["audit_entries"] >= 1_200
    assert result["ok"]
