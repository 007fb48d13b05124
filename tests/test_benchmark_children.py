"""The size-per-process benchmarks: one-line failures, and the PostgreSQL verdicts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks.postgres import render
from benchmarks.storage import child_result


def test_a_child_that_fails_ends_the_benchmark_with_one_line_naming_the_run() -> None:
    with pytest.raises(SystemExit) as stopped:
        child_result("benchmarks.storage", "--one", "many")
    message = str(stopped.value.code)
    assert message.startswith("storage: the run --one many failed (exit 2): ")
    assert message.endswith("argument --one: invalid int value: 'many'")
    assert "\n" not in message


def test_a_child_that_succeeds_gives_the_json_of_its_last_line() -> None:
    # The storage benchmark's smallest real run: 50 memories, every figure measured.
    result = child_result("benchmarks.storage", "--one", "50", "--batch", "25")
    assert result["size"] == 50 and result["batch"] == 25
    assert result["write_per_s"] > 0 and result["verify_ok"] is True


def test_the_postgres_benchmark_says_in_one_line_that_its_server_is_not_there() -> None:
    server = "postgresql://postgres@127.0.0.1:1/postgres"  # nothing listens on port 1
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.postgres", "--sizes", "10", "--server", server],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"postgres: cannot reach {server}: ")


def _run(size: int, **p95: float) -> dict[str, float]:
    figures = {"size": size, "write_per_s": 4_000.0, "database_mb": 50.0, "index_build_s": 1.0}
    for name in ("first", "peek", "recall"):
        figures[f"{name}_p50_ms"] = 10.0
        figures[f"{name}_p95_ms"] = p95.get(name, 20.0)
    return figures


def test_the_latency_target_holds_only_when_every_pass_meets_it() -> None:
    met = render([_run(1_000_000)], "PostgreSQL 15", "cmd")
    assert (
        "20.00 ms (peek), 20.00 ms (recall, which reinforces), 20.00 ms (first pass), **met**"
        in met
    )
    # The reinforcing pass over 30 ms misses the target, though the peek pass met it.
    missed = render([_run(1_000_000, recall=42.0)], "PostgreSQL 15", "cmd")
    assert "42.00 ms (recall, which reinforces), 20.00 ms (first pass), **missed**" in missed
    # Growth needs two sizes; with one there is nothing to compare.
    assert "growth" not in met
    grown = render([_run(10_000, peek=5.0), _run(1_000_000)], "PostgreSQL 15", "cmd")
    assert "- p95 growth 10,000 → 1,000,000 at most 3x: 4.00x, **missed**" in grown
