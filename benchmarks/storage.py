"""Storage benchmark: batch write rate, text recall latency and peak RSS on SQLite.

    python -m benchmarks.storage --sizes 10000 100000 --output docs/benchmarks.md \
        --results benchmarks/results

Each size runs in a fresh subprocess on a fresh database file, so peak RSS is
that size's own. Memories and queries are synthetic and deterministic (seeded):
sentences built from a Zipf-distributed vocabulary, so some query words are
common and some rare, as in real text.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.report import add_options, publish, save, section, verdict

SEED = 20261130
VOCABULARY = 20_000
QUERIES = 300
BEGIN, END = "<!-- storage:begin -->", "<!-- storage:end -->"
#: The store size the targets are set for.
TARGET_SIZE = 100_000
#: The least batch-write rate at ``TARGET_SIZE``, memories/s.
WRITE_TARGET = 20_000
#: The longest a text recall may take at ``TARGET_SIZE``, its p95 in ms.
P95_TARGET_MS = 10

PEOPLE = ["Ada", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivo", "June"]
VERBS = ["mentioned", "fixed", "asked about", "planned", "reviewed", "moved", "booked", "lost"]


def _words(rng: random.Random) -> list[str]:
    """English-like ranks: the head of a Zipf vocabulary is function words, as in real text."""
    from noema.memory.recall.pipeline import STOPWORDS

    letters = "abcdefghijklmnopqrstuvwxyz"
    head = sorted(STOPWORDS)
    rng.shuffle(head)
    tail = ["".join(rng.choices(letters, k=rng.randint(4, 9))) for _ in range(VOCABULARY)]
    return (head + tail)[:VOCABULARY]


def _zipf_weights() -> list[float]:
    return [1.0 / (rank + 1) ** 1.07 for rank in range(VOCABULARY)]


def synthetic_memories(n: int, seed: int = SEED) -> list[dict[str, Any]]:
    """``n`` deterministic memories shaped like the JSONL input of ``noema remember --file``."""
    return list(iter_synthetic_memories(n, seed))


def iter_synthetic_memories(n: int, seed: int = SEED) -> Iterator[dict[str, Any]]:
    """The memories of :func:`synthetic_memories`, one at a time (none held)."""
    rng = random.Random(seed)
    words = _words(rng)
    # Cumulative once: choices() with plain weights re-sums all 20,000 on every call.
    cumulative = list(itertools.accumulate(_zipf_weights()))
    kinds = ["episodic", "semantic", "procedural"]
    for i in range(n):
        body = " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(6, 14)))
        yield {
            "content": f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} {body} (note {i})",
            "kind": kinds[i % 3],
            "importance": round(rng.random(), 2),
            "tags": [f"topic{rng.randint(0, 49)}"],
        }


def synthetic_queries(seed: int = SEED, draw: int = 1) -> list[str]:
    """Questions shaped like real ones: a few function words, one or two content
    words from the same Zipf distribution, sometimes a person's name.

    ``draw``: another draw of questions over the same vocabulary (the benchmarks
    time the first; another warms a store's caches without answering these).
    """
    from noema.memory.recall.pipeline import STOPWORDS

    rng = random.Random(seed)
    words, weights = _words(rng), _zipf_weights()
    content = [(w, p) for w, p in zip(words, weights, strict=True) if w not in STOPWORDS]
    content_words, content_weights = zip(*content, strict=True)
    function_words = sorted(STOPWORDS)
    rng = random.Random(seed + draw)
    queries = []
    for _ in range(QUERIES):
        parts = rng.choices(function_words, k=rng.randint(1, 3))
        parts += rng.choices(content_words, content_weights, k=rng.randint(1, 2))
        if rng.random() < 0.3:
            parts.append(rng.choice(PEOPLE))
        rng.shuffle(parts)
        queries.append(" ".join(parts))
    return queries


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_one(size: int, batch: int) -> dict[str, Any]:
    """Measure one size in this process (called in a fresh subprocess)."""
    from concepts import MemoryInput
    from noema import Mind

    items = [MemoryInput.model_validate(d) for d in synthetic_memories(size)]
    queries = synthetic_queries()
    with tempfile.TemporaryDirectory() as tmp:
        with Mind.open(f"sqlite:///{tmp}/bench.db", "bench", embedder="none") as mind:
            start = time.perf_counter()
            mind.remember_many(items, batch_size=batch)
            write_seconds = time.perf_counter() - start
            assert mind.stats()["total"] == size
            latencies: dict[str, list[float]] = {"recall": [], "peek": []}
            for query in queries[:20]:  # warm the page cache
                mind.recall(query, peek=True)
            for mode in ("recall", "peek"):
                for query in queries:
                    t = time.perf_counter()
                    mind.recall(query, limit=10, peek=mode == "peek")
                    latencies[mode].append((time.perf_counter() - t) * 1000)
            verify_start = time.perf_counter()
            ok = mind.verify().ok
            verify_seconds = time.perf_counter() - verify_start
        db_mb = sum(f.stat().st_size for f in Path(tmp).iterdir()) / 1e6
    return {
        "size": size,
        "batch": batch,
        "write_per_s": size / write_seconds,
        "write_seconds": write_seconds,
        "recall_p50_ms": statistics.median(latencies["recall"]),
        "recall_p95_ms": _percentile(latencies["recall"], 0.95),
        "peek_p50_ms": statistics.median(latencies["peek"]),
        "peek_p95_ms": _percentile(latencies["peek"], 0.95),
        "verify_seconds": verify_seconds,
        "verify_ok": ok,
        "db_mb": db_mb,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def render(results: list[dict[str, Any]], command: str) -> str:
    rows = [
        f"| {r['size']:,} | {r['batch']:,} | {r['write_per_s']:,.0f} | "
        f"{r['recall_p50_ms']:.2f} ms | {r['recall_p95_ms']:.2f} ms | "
        f"{r['peek_p50_ms']:.2f} ms | {r['peek_p95_ms']:.2f} ms | "
        f"{r['verify_seconds']:.1f} s{'' if r['verify_ok'] else ' FAILED'} | "
        f"{r['db_mb']:.0f} MB | {r['peak_rss_mb']:.0f} MB |"
        for r in results
    ]
    largest = max(results, key=lambda r: r["size"])
    write, p95 = largest["write_per_s"], largest["recall_p95_ms"]
    return section(
        (BEGIN, END),
        "Storage: batch write and text recall on SQLite",
        [
            "Synthetic deterministic memories (a Zipf vocabulary whose head is English",
            "function words, 6-14 words, one tag), written with `Mind.remember_many` through",
            "the full reconciler (validation done before timing; hashing, dedup lookups, key",
            "handling, FTS indexing, one `memory_created` event and one audit entry per",
            "memory); no embedder. Recall: 300 questions of 1-3 function words and 1-2",
            "content words, 30% naming a person, limit 10; `recall` reinforces and logs each",
            "result, `peek` only reads. Medians and p95 of one run; each size in a fresh process.",
        ],
        command,
        [
            "| memories | batch | write (memories/s) | recall p50 | recall p95 | peek p50 "
            "| peek p95 | verify | db size | peak RSS |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
        ],
        [
            f"Targets at {largest['size']:,} memories"
            + ("" if largest["size"] == TARGET_SIZE else f" (set for {TARGET_SIZE:,})")
            + ":",
            f"- batch write at least {WRITE_TARGET:,}/s: {write:,.0f}/s, "
            + verdict(write, WRITE_TARGET, most=False, unit="/s"),
            f"- text recall p95 at most {P95_TARGET_MS} ms: {p95:.2f} ms, "
            + verdict(p95, P95_TARGET_MS, most=True, unit=" ms", digits=2),
        ],
    )


def child_result(module: str, *args: str, quiet: bool = True) -> Any:
    """Run ``python -m module *args`` and return the JSON value of its last output line.

    ``quiet``: the child's stderr is held back (else it streams, progress and
    all). A child that fails ends the benchmark with a one-line error naming
    the run, not the parent's traceback; its own error is its stderr's last
    line, or above when it streamed.
    """
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if quiet else None,
        text=True,
    )
    if done.returncode != 0:
        lines = (done.stderr or "").strip().splitlines()
        cause = lines[-1] if lines else "its error is above"
        name = module.rsplit(".", 1)[-1]
        raise SystemExit(
            f"{name}: the run {' '.join(args)} failed (exit {done.returncode}): {cause}"
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--batch", type=int, default=1_000)
    add_options(parser)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one, args.batch)))
        return 0
    results = []
    for size in args.sizes:
        result = child_result("benchmarks.storage", "--one", str(size), "--batch", str(args.batch))
        results.append(result)
        print(
            f"{size:>8,} memories: write {result['write_per_s']:,.0f}/s, recall p50 "
            f"{result['recall_p50_ms']:.2f} ms p95 {result['recall_p95_ms']:.2f} ms, "
            f"peak RSS {result['peak_rss_mb']:.0f} MB",
            file=sys.stderr,
        )
    command = "python -m benchmarks.storage " + " ".join(
        ["--sizes", *map(str, args.sizes), "--batch", str(args.batch)]
    )
    publish(render(results, command), args.output, BEGIN, END)
    save(args.results, "storage", command, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
