"""Federation overhead: recall latency with 0, 1 and 3 peers (ADR 0019).

    python -m benchmarks.federation --sizes 10000 [--queries 200] [--output docs/benchmarks.md] \
        [--results benchmarks/results]

For each size, a subscriber mind and three peer minds are each filled with that
many deterministic memories (short facts with names and numbers, each mind its
own), without an embedder by default (``--embedder hash`` adds the vector lane),
in two layouts: all four minds in one SQLite file (peers in the same store) and
each mind in a file of its own (peers by URL). The subscriber then answers the
same queries, in turn, with federation off, with no peer, with one peer and with
three peers; each recall is a normal one (the subscriber's own results are
reinforced; nothing is written into a peer). Reported: p50 and p95 per case,
after a warm-up that opens the peers' stores.

Medians of one run on a noisy 2-core machine: compare rows of one layout.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time

from benchmarks.knowledge_health import CITIES, NAMES, SUBJECTS, sentence
from benchmarks.report import add_options, save, section, write_section
from noema import Mind

BEGIN, END = "<!-- federation:begin -->", "<!-- federation:end -->"
PEERS = 3
WARM_UP = 10


def fill(url: str, name: str, size: int, seed: int, embedder: str) -> Mind:
    mind = Mind.open(url, name, embedder=embedder)
    rng = random.Random(seed)
    mind.remember_many([{"content": sentence(rng, i)} for i in range(size)])
    mind.wait_for_embeddings()
    return mind


def queries(count: int) -> list[str]:
    rng = random.Random(3)
    words = [*SUBJECTS, *CITIES, *NAMES]
    return [f"{rng.choice(words)} {rng.choice(words)} {rng.randint(1, 99)}" for _ in range(count)]


def timed(mind: Mind, asked: list[str], *, federated: bool = True) -> list[float]:
    for text in asked[:WARM_UP]:
        mind.recall(text, federated=federated)
    times = []
    for text in asked:
        start = time.perf_counter()
        mind.recall(text, federated=federated)
        times.append(time.perf_counter() - start)
    return sorted(times)


def interleaved(mind: Mind, asked: list[str]) -> tuple[list[float], list[float]]:
    """Each query with federation off, then on (the mind has no peer): their times."""
    off, on = [], []
    for text in asked:
        for federated, times in ((False, off), (True, on)):
            start = time.perf_counter()
            mind.recall(text, federated=federated)
            times.append(time.perf_counter() - start)
    return sorted(off), sorted(on)


def measure(size: int, count: int, layout: str, embedder: str) -> list[dict[str, object]]:
    asked = queries(count)
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        if layout == "same store":
            urls = [f"sqlite:///{tmp}/noema.db"] * (PEERS + 1)
        else:
            urls = [f"sqlite:///{tmp}/mind{i}.db" for i in range(PEERS + 1)]
        subscriber = fill(urls[0], "subscriber", size, 0, embedder)
        for i in range(1, PEERS + 1):
            fill(urls[i], f"peer{i}", size, i, embedder).close()

        def add(case: str, times: list[float]) -> None:
            rows.append(
                {
                    "layout": layout,
                    "size": size,
                    "case": case,
                    "p50": statistics.median(times) * 1000,
                    "p95": times[int(0.95 * len(times))] * 1000,
                }
            )
            print(rows[-1], flush=True)

        for text in asked:  # warm the caches once: the first case would pay for it
            subscriber.recall(text, federated=False)
        off, none = interleaved(subscriber, asked)
        add("federation off", off)
        add("0 peers", none)
        subscribed = 0
        for wanted in (1, PEERS):
            while subscribed < wanted:
                subscribed += 1
                url = None if layout == "same store" else urls[subscribed]
                subscriber.federate(f"p{subscribed}", mind=f"peer{subscribed}", url=url)
            add(f"{wanted} peer{'s' * (wanted != 1)}", timed(subscriber, asked))
        subscriber.close()
    return rows


def render(rows: list[dict[str, object]], command: str, embedder: str) -> str:
    return section(
        (BEGIN, END),
        "Federation: recall with 0, 1 and 3 peers (SQLite)",
        [
            f"Every mind holds the same number of memories (embedder: {embedder}); the",
            "subscriber's normal recall (limit 10) of the same queries, after a warm-up.",
            "`federation off` is `recall(..., federated=False)`, which skips even the",
            "read of the mind's subscriptions; each peer is a peek recall of its own, one",
            "after the other, merged with the local results.",
        ],
        command,
        [
            "| layout | memories per mind | case | recall p50 | recall p95 |",
            "|---|---:|---|---:|---:|",
            *(
                f"| {r['layout']} | {int(str(r['size'])):,} | {r['case']} "
                f"| {float(str(r['p50'])):.2f} ms | {float(str(r['p95'])):.2f} ms |"
                for r in rows
            ),
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embedder", default="none", help="none (default) or hash[:DIMS]")
    parser.add_argument(
        "--layouts",
        nargs="+",
        default=["same store", "separate files"],
        choices=["same store", "separate files"],
    )
    add_options(parser)
    args = parser.parse_args(argv)
    rows = []
    for size in args.sizes:
        for layout in args.layouts:
            rows += measure(size, args.queries, layout, args.embedder)
    command = (
        f"python -m benchmarks.federation --sizes {' '.join(map(str, args.sizes))} "
        f"--queries {args.queries}"
        + (f" --embedder {args.embedder}" if args.embedder != "none" else "")
    )
    text = render(rows, command, args.embedder)
    print(text)
    if args.output is not None:
        write_section(args.output, text, BEGIN, END)
    save(args.results, "federation", command, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
