"""The size-per-process benchmarks: a failed run or a missing server is one line, no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

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
