"""Concurrent writers: N processes write M memories each into one mind, then we count.

    python -m benchmarks.concurrency --url sqlite:///tmp/c.db \
        --url postgresql://postgres@127.0.0.1/noema_concurrency --writers 4 --memories 10000 \
        --output docs/benchmarks.md

Each writer is its own process with its own ``Mind.open`` on the same store, writing
distinct memories in batches (every one embedded inline with the hash embedder, so
vectors and entity references are written concurrently too). Afterwards the parent
checks: no memory lost, none duplicated, one vector per memory, and ``verify``
passes (the audit chain stayed one chain). Exit status 1 when any check fails.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.storage import machine, write_section

BEGIN, END = "<!-- concurrency:begin -->", "<!-- concurrency:end -->"

EMBEDDER = "hash:64"
MIND = "concurrency"


def write(url: str, writer: int, count: int, batch: int) -> float:
    """One writer process: ``count`` distinct memories in batches; returns its seconds."""
    from noema import Mind

    items = [
        {"content": f"writer {writer} wrote memory {i} about topic {i % 97}", "kind": "episodic"}
        for i in range(count)
    ]
    start = time.perf_counter()
    with Mind.open(url, MIND, embedder=EMBEDDER) as mind:
        mind.remember_many(items, batch_size=batch)
        mind.wait_for_embeddings()  # a bulk write is embedded after it commits
    return time.perf_counter() - start


def check(url: str, writers: int, count: int) -> dict[str, Any]:
    """Counts and verification after all writers have finished."""
    from noema import Mind
    from noema.storage import ops

    with Mind.open(url, MIND, embedder=EMBEDDER) as mind:
        stats = mind.stats()
        contents: set[str] = set()
        rows = 0
        after = None
        while True:
            with mind.storage.transaction(write=False) as session:
                page = session.run(ops.ScanMemories(mind.id, after_id=after, limit=5_000))
            if not page:
                break
            rows += len(page)
            contents.update(m.content for m in page)
            after = page[-1].id
        assert mind.embedder is not None
        with mind.storage.transaction(write=False) as session:
            vectors, _ = session.run(
                ops.CountVectors(mind.id, mind.embedder.model, mind.embedder.dims)
            )
        report = mind.verify()
    expected = writers * count
    return {
        "expected": expected,
        "memories": stats["total"],
        "lost": expected - len(contents),
        "duplicated": rows - len(contents),
        "vectors": vectors,
        "verify_ok": report.ok,
        "audit_entries": report.entries,
    }


def run(url: str, writers: int, count: int, batch: int) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    start = time.perf_counter()
    with context.Pool(writers) as pool:
        seconds = pool.starmap(write, [(url, w, count, batch) for w in range(writers)])
    wall = time.perf_counter() - start
    result = check(url, writers, count)
    result.update(
        {
            "writers": writers,
            "per_writer": count,
            "batch": batch,
            "wall_seconds": wall,
            "writer_seconds": seconds,
            "memories_per_s": writers * count / wall,
        }
    )
    result["ok"] = (
        result["lost"] == 0
        and result["duplicated"] == 0
        and result["memories"] == result["expected"]
        and result["vectors"] == result["expected"]
        and result["verify_ok"]
    )
    return result


def render(results: list[tuple[str, dict[str, Any]]], command: str) -> str:
    first = results[0][1]
    rows = [
        f"| {url.split(':', 1)[0]} | {r['memories']:,} | {r['lost']} | {r['duplicated']} | "
        f"{r['vectors']:,} | {'passes' if r['verify_ok'] else 'FAILS'} | "
        f"{r['wall_seconds']:.1f} s | {r['memories_per_s']:,.0f} |"
        for url, r in results
    ]
    return "\n".join(
        [
            BEGIN,
            "## Concurrent writers",
            "",
            f"Measured on {machine()}.",
            f"Command: `{command}`",
            "",
            f"{first['writers']} processes, each writing {first['per_writer']:,} distinct "
            f"memories in batches of {first['batch']} into one mind (inline hash-embedder "
            "vectors and entity references included), all at once; one store per backend.",
            "",
            "| backend | memories | lost | duplicated | vectors | verify | wall | memories/s |",
            "|---|---:|---:|---:|---:|---|---:|---:|",
            *rows,
            END,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url",
        action="append",
        required=True,
        help="an empty store, e.g. sqlite:///tmp/c.db (repeat for one row per store)",
    )
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--memories", type=int, default=10_000, help="per writer")
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--output", type=Path, help="markdown file to update")
    args = parser.parse_args(argv)
    from noema import Mind

    for url in args.url:
        with Mind.open(url, MIND, embedder="none") as mind:
            if mind.stats()["total"]:
                print(f"concurrency: mind {MIND!r} at {url} is not empty", file=sys.stderr)
                return 2
    results = [(url, run(url, args.writers, args.memories, args.batch)) for url in args.url]
    print(json.dumps(dict(results), indent=2))
    if args.output:
        urls = " ".join(f"--url {url}" for url in args.url)
        command = (
            f"python -m benchmarks.concurrency {urls} --writers {args.writers} "
            f"--memories {args.memories} --batch {args.batch}"
        )
        write_section(args.output, render(results, command), BEGIN, END)
    return 0 if all(r["ok"] for _, r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
