"""Memory: the peak RSS of a Noema process at 100k and 1M memories, on SQLite with vectors.

    python -m benchmarks.memory --sizes 100000 1000000 --output docs/benchmarks.md \
        --results benchmarks/results

Each size is one SQLite file written and read by three fresh processes, each
measured whole (``ru_maxrss``, the peak resident set of the process):

- **write**: the storage benchmark's seeded memories, streamed in batches of
  ``--batch`` through ``remember_many`` with the 384-d hash embedder inline (so
  every memory has a vector); the workload is generated as it is written, so the
  peak is Noema's and one batch's, not a list of every input;
- **recall, index built**: open the store with its saved vector index removed,
  then 200 `peek` recalls (the first one rebuilds the index from the table);
- **recall, index loaded**: open it again (the index saved by the previous
  process is loaded) and the same 200 recalls.

The same can be checked by hand with ``/usr/bin/time -v``. Target: at
100k memories, every process at most ``TARGET_MB``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.report import add_options, save, section, verdict, write_section
from benchmarks.storage import iter_synthetic_memories, synthetic_queries

BEGIN, END = "<!-- memory:begin -->", "<!-- memory:end -->"
#: The most a process may hold at 100k memories with vectors, in MB.
TARGET_MB = 400
TARGET_SIZE = 100_000
DIMS = 384
QUERIES = 200
PHASES = ("write", "built", "loaded")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_phase(phase: str, path: Path, size: int, batch: int) -> dict[str, Any]:
    """One process's work (called in a fresh subprocess); its peak RSS and timings."""
    from concepts import MemoryInput
    from noema import Mind
    from noema.config import MindConfig
    from noema.embeddings import HashEmbedder

    url, embedder = f"sqlite:///{path}", HashEmbedder(DIMS)
    start = time.perf_counter()
    if phase == "write":
        config = MindConfig(embed_inline_max=batch)  # vectors written with each batch
        with Mind.open(url, "bench", embedder=embedder, config=config) as mind:
            items = iter_synthetic_memories(size)
            while chunk := [MemoryInput.model_validate(d) for d in itertools.islice(items, batch)]:
                mind.remember_many(chunk, batch_size=batch)
        seconds = time.perf_counter() - start
        return {"peak_rss_mb": _peak_mb(), "seconds": seconds, "per_s": size / seconds}
    if phase == "built":
        shutil.rmtree(path.with_name(path.name + ".vectors"), ignore_errors=True)
    with Mind.open(url, "bench", embedder=embedder) as mind:
        assert mind.stats()["total"] == size
        for query in synthetic_queries()[:QUERIES]:
            mind.recall(query, limit=10, peek=True)
    return {"peak_rss_mb": _peak_mb(), "seconds": time.perf_counter() - start}


def run_size(size: int, batch: int) -> dict[str, Any]:
    """Write and read one store of ``size`` memories, each phase in its own process."""
    result: dict[str, Any] = {"size": size, "batch": batch}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory.db"
        for phase in PHASES:
            argv = [sys.executable, "-m", "benchmarks.memory", "--phase", phase]
            argv += ["--path", str(path), "--size", str(size), "--batch", str(batch)]
            print(f"  {phase} at {size:,}", file=sys.stderr, flush=True)
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"memory: {phase} at {size:,} failed:\n{done.stderr}")
            result[phase] = json.loads(done.stdout.splitlines()[-1])
        result["db_mb"] = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file()) / 1e6
    return result


def render(results: list[dict[str, Any]], command: str, load: tuple[float, ...]) -> str:
    rows = [
        f"| {r['size']:,} | {r['write']['peak_rss_mb']:.0f} MB | "
        f"{r['write']['per_s']:,.0f}/s | {r['built']['peak_rss_mb']:.0f} MB | "
        f"{r['loaded']['peak_rss_mb']:.0f} MB | {r['db_mb']:,.0f} MB |"
        for r in results
    ]
    targets = []
    at_target = [r for r in results if r["size"] == TARGET_SIZE]
    if at_target:
        peak = max(at_target[0][phase]["peak_rss_mb"] for phase in PHASES)
        targets = [
            f"Target: every process at most {TARGET_MB} MB at {TARGET_SIZE:,} memories with "
            f"vectors: {peak:.0f} MB at most, "
            + verdict(peak, TARGET_MB, most=True, unit=" MB")
            + "."
        ]
    return section(
        (BEGIN, END),
        "Memory: peak RSS of one process, SQLite with vectors",
        [
            "One store per size; each phase a fresh process, its peak RSS (`ru_maxrss`).",
            "Write: the seeded memories streamed in batches through `remember_many` with",
            f"the {DIMS}-d hash embedder inline. Recall: {QUERIES} `peek` recalls, top 10, after",
            "opening the store with its saved vector index removed (the first recall",
            "rebuilds it from the table) and then with the saved index (loaded).",
        ],
        command,
        [
            "| memories | write: peak RSS | write rate | recall, index built: peak RSS | "
            "recall, index loaded: peak RSS | db + index on disk |",
            "|---:|---:|---:|---:|---:|---:|",
            *rows,
        ],
        targets,
        setting="; load average (1, 5, 15 min) " + ", ".join(f"{x:.2f}" for x in load) + " before",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--batch", type=int, default=2_000)
    add_options(parser)
    parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.batch < 1 or any(size < 1 for size in args.sizes):
        print("memory: --sizes and --batch must be at least 1", file=sys.stderr)
        return 2
    if args.phase:
        print(json.dumps(run_phase(args.phase, args.path, args.size, args.batch)))
        return 0
    load = os.getloadavg()
    results = [run_size(size, args.batch) for size in args.sizes]
    parts = ["python", "-m", "benchmarks.memory", "--sizes", *map(str, args.sizes)]
    text = render(results, shlex.join([*parts, "--batch", str(args.batch)]), load)
    if args.output:
        write_section(args.output, text, BEGIN, END)
    print(text)
    for result in results:  # one file a size: the largest is often run alone
        alone = f"python -m benchmarks.memory --sizes {result['size']} --batch {args.batch}"
        save(args.results, f"memory-{result['size']}", alone, [result])
    return 0


if __name__ == "__main__":
    sys.exit(main())
