"""Invariant 6: a crash (kill -9) at any point loses no committed memory.

A child process writes batches of memories into one SQLite file and reports each
batch on stdout once ``remember_many`` has returned. The parent kills it with
SIGKILL at a random moment, many times over, on the same growing database. After
every kill the store must open, hold every reported batch whole, hold no batch
in part, and verify.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

from noema import Mind

KILLS = 20
BATCH = 100
SEED = 20260106
#: A child that does not report within this many seconds is stuck, not slow.
WATCHDOG_SECONDS = 60.0

# The child writes batches forever: one transaction per batch (batch_size=BATCH),
# then one reinforcing recall, so kills also land inside update transactions.
CHILD = """
import sys
from noema import Mind

url, run, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
kinds = ("semantic", "episodic", "procedural")
mind = Mind.open(url, "default")
print("ready", flush=True)
b = 0
while True:
    items = [
        {
            "content": f"crash run {run} batch {b} item {i} token r{run}b{b}i{i}",
            "kind": kinds[i % 3],
            "tags": [f"run{run}", f"batch{b}"],
            "importance": (i % 10) / 10,
        }
        for i in range(batch)
    ]
    mind.remember_many(items, batch_size=batch)
    print(f"committed {b}", flush=True)
    mind.recall(f"r{run}b{b}i0", limit=1)
    b += 1
"""

CONTENT = re.compile(r"crash run (\d+) batch (\d+) item (\d+) token r\1b\2i\3")


def _expected(run: int, batch: int) -> set[str]:
    return {
        f"crash run {run} batch {batch} item {i} token r{run}b{batch}i{i}" for i in range(BATCH)
    }


def _child_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("NOEMA_")}


def _run_and_kill(url: str, run: int, rng: random.Random, stderr_path: Path) -> int:
    """Start a writer, SIGKILL it at a random point; return how many batches it reported."""
    with stderr_path.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, url, str(run), str(BATCH)],
            stdout=subprocess.PIPE,
            stderr=err,
            env=_child_env(),
            text=True,
        )
    watchdog = threading.Timer(WATCHDOG_SECONDS, proc.kill)
    watchdog.start()
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        if rng.random() < 0.25:
            # Anywhere in start-up or the first batches: import, migrations, open.
            time.sleep(rng.uniform(0.0, 0.5))
        else:
            wanted = rng.randint(1, 3)
            while sum(line.startswith("committed") for line in lines) < wanted:
                line = proc.stdout.readline()
                if not line:
                    break  # EOF: the child died by itself; reported below.
                lines.append(line.strip())
            # A batch takes about ten milliseconds: land anywhere in the next one or two.
            time.sleep(rng.uniform(0.0, 0.05))
        proc.send_signal(signal.SIGKILL)
        lines.extend(line.strip() for line in proc.stdout.read().splitlines())
        proc.wait()
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL, (
        f"run {run}: the writer ended by itself (status {proc.returncode}):\n"
        + stderr_path.read_text(errors="replace")
    )
    committed = [line for line in lines if line.startswith("committed")]
    assert committed == [f"committed {b}" for b in range(len(committed))], lines
    return len(committed)


def _batches_in(mind: Mind) -> dict[tuple[int, int], set[str]]:
    """Contents of every stored memory, grouped by (run, batch), from the export."""
    found: dict[tuple[int, int], set[str]] = defaultdict(set)
    for line in mind.export_lines():
        record = json.loads(line)
        if record["type"] in ("relationship", "event", "audit"):
            break  # memories come first; the rest is not needed here
        if record["type"] != "memory":
            continue
        match = CONTENT.fullmatch(record["content"])
        assert match, f"unexpected content {record['content']!r}"
        found[int(match[1]), int(match[2])].add(record["content"])
    return found


@pytest.mark.slow
def test_kill_9_loses_no_committed_batch_and_leaves_the_store_openable(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    reported: dict[int, int] = {}
    for run in range(KILLS):
        reported[run] = _run_and_kill(url, run, rng, tmp_path / f"stderr-{run}.txt")

        with Mind.open(url, "default") as mind:
            found = _batches_in(mind)
            report = mind.verify()
            assert report.ok, f"after kill {run}: {report.problem}"
            assert mind.stats()["total"] == sum(len(c) for c in found.values())
            # Every batch is all or nothing.
            for (r, b), contents in found.items():
                assert contents == _expected(r, b), (
                    f"after kill {run}: batch {b} of run {r} is partial "
                    f"({len(contents)} of {BATCH} memories)"
                )
            # Every reported batch of every run so far survived; at most one more
            # (committed, then killed before it was reported) is present.
            for r, count in reported.items():
                present = sorted(b for rr, b in found if rr == r)
                assert present == list(range(len(present))), f"run {r}: batches {present}"
                assert count <= len(present) <= count + 1, (
                    f"after kill {run}: run {r} reported {count} batches, store holds {present}"
                )
            assert {r for r, _ in found} <= set(reported)
            if reported[run]:
                hits = mind.recall(f"r{run}b0i7", limit=3, peek=True)
                assert [h.memory.content for h in hits] == [
                    f"crash run {run} batch 0 item 7 token r{run}b0i7"
                ]

    # The test must not pass vacuously: most runs were killed after writing something.
    assert sum(1 for n in reported.values() if n) >= KILLS // 2, reported
