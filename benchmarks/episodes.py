"""Task episodes at scale (ADR 0022): writes, episode recall, statistics, procedures.

    python -m benchmarks.episodes --sizes 1000 10000 [--queries 200] \
        [--output docs/benchmarks.md] [--results benchmarks/results]

For each size, a fresh SQLite mind (hash embedder, 384 dimensions: the vector
lane runs) gets that many deterministic episodes (40 task topics, 60
approaches, 5 roles, 8 agents, 12 tools, a third of them failures or partial
outcomes) through ``record_episodes`` in batches of 1,000; then 200 single
``record_episode`` calls are timed, ``recall_episodes`` answers 200 queries
(a role filter on every other one), ``episode_stats`` runs 5 times, and one
``consolidate`` distils the procedures. Medians of one run on a noisy 2-core
machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.report import add_options, save, section, write_section
from noema import Mind

BEGIN, END = "<!-- episodes:begin -->", "<!-- episodes:end -->"
TOPICS = [
    f"{verb} the {thing}"
    for verb in ("fix", "deploy", "migrate", "review", "document")
    for thing in (
        "billing job",
        "login page",
        "search index",
        "upload API",
        "report export",
        "cache layer",
        "message queue",
        "payments service",
    )
]
ROLES = ["coder", "reviewer", "ops", "analyst", "writer"]
TOOLS = [
    "git",
    "pytest",
    "grep",
    "curl",
    "psql",
    "kubectl",
    "docker",
    "make",
    "ruff",
    "mypy",
    "browser",
    "editor",
]


def episode(rng: random.Random, index: int) -> dict[str, Any]:
    topic = rng.choice(TOPICS)
    return {
        "task": f"{topic} (ticket {index})",
        "role": rng.choice(ROLES),
        "agent": f"agent-{rng.randrange(8)}",
        "approach": f"approach {rng.randrange(60)} for {topic.split()[0]}",
        "actions": [
            {"tool": tool, "arguments": f"{tool} step", "result": "done"}
            for tool in rng.sample(TOOLS, 3)
        ],
        "outcome": rng.choices(["success", "failure", "partial"], weights=[4, 1, 1])[0],
        "rating": round(rng.random(), 2),
    }


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run(size: int, queries: int) -> dict[str, Any]:
    rng = random.Random(size)
    with tempfile.TemporaryDirectory() as folder:
        mind = Mind.open(f"sqlite:///{Path(folder) / 'episodes.db'}", "bench", embedder="hash")
        batch = [episode(rng, i) for i in range(size)]
        started = time.perf_counter()
        for start in range(0, size, 1_000):
            mind.record_episodes(batch[start : start + 1_000])
        mind.wait_for_embeddings()
        bulk = size / (time.perf_counter() - started)
        singles = []
        for index in range(200):
            one = episode(rng, size + index)
            started = time.perf_counter()
            mind.record_episode(one)
            singles.append(time.perf_counter() - started)
        recalls = []
        for index in range(queries):
            text = f"{rng.choice(TOPICS)} ticket"
            role = ROLES[index % len(ROLES)] if index % 2 else None
            started = time.perf_counter()
            mind.recall_episodes(text, role=role, peek=True)
            recalls.append(time.perf_counter() - started)
        stats = []
        for _ in range(5):
            started = time.perf_counter()
            mind.episode_stats()
            stats.append(time.perf_counter() - started)
        started = time.perf_counter()
        procedures = len(mind.consolidate().procedures)
        distil = time.perf_counter() - started
        mind.close()
    return {
        "size": size,
        "bulk": bulk,
        "single_ms": statistics.median(singles) * 1000,
        "p50": percentile(recalls, 0.5) * 1000,
        "p95": percentile(recalls, 0.95) * 1000,
        "stats_ms": statistics.median(stats) * 1000,
        "procedures": procedures,
        "distil_s": distil,
    }


def render(results: list[dict[str, Any]], command: str) -> str:
    rows = [
        f"| {r['size']:,} | {r['bulk']:,.0f} | {r['single_ms']:.1f} | {r['p50']:.1f} | "
        f"{r['p95']:.1f} | {r['stats_ms']:.0f} | {r['procedures']} in {r['distil_s']:.1f} s |"
        for r in results
    ]
    return section(
        (BEGIN, END),
        "Task episodes (ADR 0022)",
        [
            "SQLite, hash embedder (384-d); medians of one run. Bulk: `record_episodes` in",
            "batches of 1,000, embedding included; single: one `record_episode`; recall:",
            "`recall_episodes`, top 10, a role filter on every other query; stats:",
            "`episode_stats` over every episode; distil: one `consolidate`, which writes the",
            "procedures.",
        ],
        command,
        [
            "| episodes | bulk writes/s | single write ms | recall p50 ms | recall p95 ms "
            "| stats ms | procedures written |",
            "|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--queries", type=int, default=200)
    add_options(parser)
    args = parser.parse_args(argv)
    results = []
    for size in args.sizes:
        results.append(run(size, args.queries))
        print(results[-1], flush=True)
    sizes = " ".join(str(s) for s in args.sizes)
    command = f"python -m benchmarks.episodes --sizes {sizes} --queries {args.queries}"
    text = render(results, command)
    print(text)
    if args.output is not None:
        write_section(args.output, text, BEGIN, END)
    save(args.results, "episodes", command, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
