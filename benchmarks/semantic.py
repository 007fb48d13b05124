"""Semantic recall benchmark: hybrid recall latency with vectors, and write rates with embedding.

    python -m benchmarks.semantic --sizes 10000 100000 --output docs/benchmarks.md

Each size runs in a fresh subprocess on a fresh SQLite file. Memories and queries
are the storage benchmark's (seeded, Zipf-distributed words). Vectors come from
the deterministic 384-d hash embedder, embedded inline on write; recall times
exclude the query embedding, which is timed apart (hash, and MiniLM when the
``embeddings`` extra is installed, with its own inline write rate on 2,000
memories). The HNSW index is built from the table on the first search, saved
when the store closes, and loaded on the next open: both are timed.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.storage import (
    _percentile,
    machine,
    synthetic_memories,
    synthetic_queries,
    write_section,
)

BEGIN, END = "<!-- semantic:begin -->", "<!-- semantic:end -->"
EMBEDDER = "hash:384"
MINILM_WRITES = 2_000
TARGET_SIZE, TARGET_P95_MS = 100_000, 15.0


def _recall_times(mind: Any, queries: list[str], vectors: list[Any], peek: bool) -> list[float]:
    from noema.mind import recall_query

    times = []
    for query, vector in zip(queries, vectors, strict=True):
        request = recall_query(query, limit=10, peek=peek)
        t = time.perf_counter()
        mind._recaller.recall(request, vector)
        times.append((time.perf_counter() - t) * 1000)
    return times


def run_one(size: int, batch: int) -> dict[str, Any]:
    """Measure one size in this process (called in a fresh subprocess)."""
    from concepts import MemoryInput
    from noema import Mind

    items = [MemoryInput.model_validate(d) for d in synthetic_memories(size)]
    queries = synthetic_queries()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        with Mind.open(url, "bench", embedder=EMBEDDER) as mind:
            start = time.perf_counter()
            mind.remember_many(items, batch_size=batch)
            write_seconds = time.perf_counter() - start
            embed_times = []
            vectors = []
            for query in queries:
                t = time.perf_counter()
                vectors.append(mind.embedder.query(query))
                embed_times.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            mind.recall(queries[0], peek=True)  # builds the vector index from the table
            build_seconds = time.perf_counter() - t
            _recall_times(mind, queries[:20], vectors[:20], peek=True)  # warm the caches
            peek = _recall_times(mind, queries, vectors, peek=True)
            recall = _recall_times(mind, queries, vectors, peek=False)
        with Mind.open(url, "bench", embedder=EMBEDDER) as mind:
            t = time.perf_counter()
            mind.recall(queries[0], peek=True)  # loads the saved index
            load_seconds = time.perf_counter() - t
    return {
        "size": size,
        "write_per_s": size / write_seconds,
        "embed_p50_ms": statistics.median(embed_times),
        "index_build_s": build_seconds,
        "index_load_s": load_seconds,
        "peek_p50_ms": statistics.median(peek),
        "peek_p95_ms": _percentile(peek, 0.95),
        "recall_p50_ms": statistics.median(recall),
        "recall_p95_ms": _percentile(recall, 0.95),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_minilm() -> dict[str, Any] | None:
    """MiniLM's query embedding time and inline write rate, when the extra is installed."""
    from concepts import MemoryInput
    from noema import Mind
    from noema.embeddings import minilm_available

    if not minilm_available():
        return None
    items = [MemoryInput.model_validate(d) for d in synthetic_memories(MINILM_WRITES)]
    queries = synthetic_queries()[:100]
    with (
        tempfile.TemporaryDirectory() as tmp,
        Mind.open(f"sqlite:///{tmp}/bench.db", "bench", embedder="minilm") as mind,
    ):
        mind.embedder.query("load the model")
        start = time.perf_counter()
        mind.remember_many(items)
        write_seconds = time.perf_counter() - start
        times = []
        for query in queries:
            t = time.perf_counter()
            mind.embedder.query(query)
            times.append((time.perf_counter() - t) * 1000)
    return {
        "size": MINILM_WRITES,
        "write_per_s": MINILM_WRITES / write_seconds,
        "embed_p50_ms": statistics.median(times),
        "embed_p95_ms": _percentile(times, 0.95),
    }


def render(results: list[dict[str, Any]], minilm: dict[str, Any] | None, command: str) -> str:
    lines = [
        BEGIN,
        "## Semantic recall: latency with vectors, write rates with embedding",
        "",
        f"Measured on {machine()}.",
        f"Command: `{command}`",
        "",
        "Hybrid recall (text + vector + graph lanes, weighted fusion, limit 10) over synthetic",
        "memories with 384-d vectors from the hash embedder, written with inline embedding.",
        "Recall times exclude the query embedding (timed apart). `peek` is read-only;",
        "`recall` also reinforces the results and logs `memory_retrieved` events.",
        "",
        "| memories | write with inline embedding | query embedding p50 | index build | "
        "index load | peek p50 | peek p95 | recall p50 | recall p95 | peak RSS |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['size']:,} | {r['write_per_s']:,.0f}/s | {r['embed_p50_ms']:.2f} ms | "
            f"{r['index_build_s']:.1f} s | {r['index_load_s']:.2f} s | "
            f"{r['peek_p50_ms']:.2f} ms | {r['peek_p95_ms']:.2f} ms | "
            f"{r['recall_p50_ms']:.2f} ms | {r['recall_p95_ms']:.2f} ms | "
            f"{r['peak_rss_mb']:.0f} MB |"
        )
    lines.append("")
    if minilm is not None:
        lines += [
            f"MiniLM (all-MiniLM-L6-v2, torch CPU): query embedding p50 "
            f"{minilm['embed_p50_ms']:.1f} ms, p95 {minilm['embed_p95_ms']:.1f} ms; "
            f"write with inline embedding {minilm['write_per_s']:,.0f} memories/s "
            f"({minilm['size']:,} memories).",
            "",
        ]
    else:
        lines += ["MiniLM: not measured (the embeddings extra is not installed).", ""]
    at_target = [r for r in results if r["size"] == TARGET_SIZE]
    for r in at_target:
        verdict = "met" if r["peek_p95_ms"] <= TARGET_P95_MS else "missed"
        lines.append(
            f"Target (issue 4): hybrid recall p95 at most {TARGET_P95_MS:.0f} ms at "
            f"{TARGET_SIZE:,} memories on SQLite: {r['peek_p95_ms']:.2f} ms (peek), "
            f"{r['recall_p95_ms']:.2f} ms (recall with reinforcement): **{verdict}**."
        )
    lines.append(END)
    return "\n".join(lines)


def _subprocess(*args: str) -> Any:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.semantic", *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--output", type=Path, help="markdown file to update")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--minilm", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one, args.batch)))
        return 0
    if args.minilm:
        print(json.dumps(run_minilm()))
        return 0
    results = []
    for size in args.sizes:
        result = _subprocess("--one", str(size), "--batch", str(args.batch))
        results.append(result)
        print(
            f"{size:>8,} memories: write {result['write_per_s']:,.0f}/s, peek p50 "
            f"{result['peek_p50_ms']:.2f} ms p95 {result['peek_p95_ms']:.2f} ms",
            file=sys.stderr,
        )
    minilm = _subprocess("--minilm")
    command = "python -m benchmarks.semantic " + " ".join(
        ["--sizes", *map(str, args.sizes), "--batch", str(args.batch)]
    )
    section = render(results, minilm, command)
    if args.output:
        write_section(args.output, section, BEGIN, END)
    else:
        print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
