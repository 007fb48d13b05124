"""Cold start: the wall time of one `noema` process, `--help` and `recall`.

    python -m benchmarks.coldstart --output docs/benchmarks.md --results benchmarks/results

A store of ``--memories`` notes is written once with the default embedder (its
vectors stored). Then each command runs ``--runs`` times as a fresh process
(interpreter start, imports, opening the store, loading the embedder, embedding
the query, recall, printing); the median and the spread are reported, with the
machine's load average before the benchmark (other work on the machine slows them).
The same can be checked by hand with ``/usr/bin/time -v noema recall ...``.

Targets: ``noema --help`` within ``HELP_TARGET_S`` and a cold
``noema recall`` with the default embedder within ``RECALL_TARGET_S``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import add_options, save, section, verdict, write_section
from benchmarks.storage import synthetic_memories

BEGIN, END = "<!-- coldstart:begin -->", "<!-- coldstart:end -->"
#: The longest a `noema --help` process may take, in seconds of wall time.
HELP_TARGET_S = 0.3
#: The longest a cold `noema recall` with the default embedder may take.
RECALL_TARGET_S = 1.0


def _noema() -> str:
    return str(Path(sys.executable).with_name("noema"))


def _time(command: list[str], env: dict[str, str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def run(memories: int, runs: int) -> tuple[list[tuple[str, list[float]]], float]:
    """Time each command ``runs`` times; the rows, and the 1-minute load average before them."""
    from concepts import MemoryInput
    from noema import Mind

    load = os.getloadavg()[0]  # before the store is written, which loads the machine itself
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/cold.db"
        items = [MemoryInput.model_validate(d) for d in synthetic_memories(memories)]
        with Mind.open(url, "cold", embedder="auto") as mind:
            mind.remember_many(items)
            mind.wait_for_embeddings()
        env = {k: v for k, v in os.environ.items() if not k.startswith("NOEMA_")}
        cases = [
            ("`noema --help`", [_noema(), "--help"], {}),
            (
                "`noema recall` (default embedder: e5)",
                [_noema(), "--db", url, "--mind", "cold", "recall", "release notes", "--peek"],
                {},
            ),
            (
                "`noema recall --depth deep` (e5, lexical reranker)",
                [
                    _noema(),
                    "--db",
                    url,
                    "--mind",
                    "cold",
                    "recall",
                    "release notes",
                    "--depth",
                    "deep",
                ],
                {},
            ),
            (
                "`noema recall` with `NOEMA_EMBEDDER=none` (text only)",
                [_noema(), "--db", url, "--mind", "cold", "recall", "release notes", "--peek"],
                {"NOEMA_EMBEDDER": "none"},
            ),
        ]
        for label, command, extra in cases:
            _time(command, env | extra, 1)  # the first run fills the OS page cache
            rows.append((label, _time(command, env | extra, runs)))
    return rows, load


def render(rows: list[tuple[str, list[float]]], command: str, memories: int, load: float) -> str:
    help_s, recall_s = statistics.median(rows[0][1]), statistics.median(rows[1][1])
    return section(
        (BEGIN, END),
        "Cold start: one `noema` process",
        [
            f"A SQLite store of {memories:,} memories with e5 vectors; each command is a fresh",
            "process, timed whole (median of the runs, after one warm-up run): interpreter",
            "start, imports, opening the store, loading the embedder, the recall, the output.",
        ],
        command,
        [
            "| command | median | min | max |",
            "|---|---:|---:|---:|",
            *(
                f"| {label} | {statistics.median(times):.2f} s | {min(times):.2f} s "
                f"| {max(times):.2f} s |"
                for label, times in rows
            ),
        ],
        [
            "Targets:",
            f"- `noema --help` at most {HELP_TARGET_S} s: {help_s:.2f} s, "
            + verdict(help_s, HELP_TARGET_S, most=True, unit=" s", digits=2),
            f"- a cold `noema recall` with the default embedder at most {RECALL_TARGET_S} s: "
            f"{recall_s:.2f} s, "
            + verdict(recall_s, RECALL_TARGET_S, most=True, unit=" s", digits=2),
        ],
        setting=f"; load average (1 minute) {load:.2f} before",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=7)
    add_options(parser)
    args = parser.parse_args(argv)
    if args.memories < 1 or args.runs < 1:
        print("coldstart: --memories and --runs must be at least 1", file=sys.stderr)
        return 2
    rows, load = run(args.memories, args.runs)
    parts = ["python", "-m", "benchmarks.coldstart", "--memories", str(args.memories)]
    command = shlex.join([*parts, "--runs", str(args.runs)])
    text = render(rows, command, args.memories, load)
    if args.output:
        write_section(args.output, text, BEGIN, END)
    print(text)
    figures = [
        {
            "command": label,
            "median_s": statistics.median(times),
            "min_s": min(times),
            "max_s": max(times),
            "runs_s": times,
        }
        for label, times in rows
    ]
    save(args.results, "coldstart", command, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
