"""Semantic recall benchmark: hybrid recall latency with vectors, and write rates with embedding.

    python -m benchmarks.semantic --sizes 10000 100000 --output docs/benchmarks.md \
        --results benchmarks/results

Each size runs in a fresh subprocess on a fresh SQLite file. Memories and queries
are the storage benchmark's (seeded, Zipf-distributed words). Vectors come from
the deterministic 384-d hash embedder (the width of e5 and MiniLM), embedded
inline on write; recall times exclude the query embedding, which is timed apart
for each packaged embedder (e5, the default, and MiniLM when the ``embeddings``
extra is installed) with their write rates on 2,000 memories. Fast and deep
recall are timed, and each stage of a fast recall apart. The HNSW index is built
from the table on the first search, saved when the store closes, and loaded on
the next open: both are timed.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from itertools import pairwise
from typing import Any

from benchmarks.report import add_options, publish, save, section, verdict
from benchmarks.storage import _percentile, child_result, synthetic_memories, synthetic_queries

#: Vectors are written inline with every batch, as these figures have always measured.
INLINE_MAX = 1_000_000
BEGIN, END = "<!-- semantic:begin -->", "<!-- semantic:end -->"
EMBEDDER = "hash:384"
#: Memories written with each packaged embedder: in one batch, and one at a time.
MODEL_WRITES = 2_000
MODEL_INLINE = 200
TARGET_SIZE, TARGET_P95_MS, TARGET_DEEP_P95_MS = 100_000, 15.0, 300.0


def _recall_times(
    mind: Any, queries: list[str], vectors: list[Any], peek: bool, depth: str = "fast"
) -> list[float]:
    from noema.memory.recall.reader import recall_query

    times = []
    for query, vector in zip(queries, vectors, strict=True):
        request = recall_query(query, limit=10, peek=peek, depth=depth)
        t = time.perf_counter()
        mind._recaller.recall(request, vector)
        times.append((time.perf_counter() - t) * 1000)
    return times


#: The stages of one fast recall, timed apart (``stage_times``); ``rank`` holds
#: everything after scoring, the neighbour lift (``context``) and the learned
#: ranker (``ranker``) among it, which are also timed alone.
STAGES = ("understand", "text+keys", "vector", "graph", "score", "rank", "context", "ranker")


def stage_times(mind: Any, queries: list[str], vectors: list[Any]) -> dict[str, list[float]]:
    """Each stage of ``Recaller.candidates`` and ``rank`` timed apart, in ms (peek)."""
    from noema.memory.recall.context import lift_neighbours
    from noema.memory.recall.lanes import graph_lane, text_lane, vector_lane, vector_search
    from noema.memory.recall.pipeline import _recall_filters, candidate_pool
    from noema.memory.recall.query import understand
    from noema.memory.recall.ranker import load_ranker, rerank_head
    from noema.memory.recall.reader import recall_query
    from noema.memory.recall.scoring import score

    recaller = mind._recaller
    assert mind.embedder is not None
    model = mind.embedder.model
    ranker = load_ranker(vectors=True)
    assert ranker is not None
    times: dict[str, list[float]] = {stage: [] for stage in STAGES}
    for query, vector in zip(queries, vectors, strict=True):
        request = recall_query(query, limit=10, peek=True)
        filters = _recall_filters(request)
        pool = candidate_pool(request.limit, mind.config)
        with mind.storage.transaction(write=False) as session:
            now = mind.clock.now()
            marks = [time.perf_counter()]
            plan = understand(query, now)
            marks.append(time.perf_counter())
            found: dict[str, Any] = {}
            text_lane(session, mind.id, request, plan, filters, pool, found, has_embedder=True)
            marks.append(time.perf_counter())
            search = vector_search(session, mind.id, model, request, filters, pool, vector)
            vector_lane(session, mind.id, model, search, vector, found)
            marks.append(time.perf_counter())
            graph_lane(session, mind.id, request, filters, pool, found)
            marks.append(time.perf_counter())
            for candidate in found.values():
                score(candidate, plan, "weighted", now, now, mind.config, vectors=True, rng=None)
            marks.append(time.perf_counter())
            recaller.rank(session, request, now, vector)
            marks.append(time.perf_counter())
            # The stages after fusion (inside ``rank``), timed apart on the same candidates.
            scored = recaller.candidates(session, request, now, vector, plan=plan)
            marks.append(time.perf_counter())
            weight = mind.config.weights.context
            scored = lift_neighbours(session, mind.id, scored, weight, filters)
            marks.append(time.perf_counter())
            rerank_head(ranker, plan, scored)
            marks.append(time.perf_counter())
        spans = list(pairwise(marks))
        del spans[len(STAGES) - 2]  # gathering the candidates again
        for stage, (a, b) in zip(STAGES, spans, strict=True):
            times[stage].append((b - a) * 1000)
    return times


def run_one(size: int, batch: int) -> dict[str, Any]:
    """Measure one size in this process (called in a fresh subprocess)."""
    from concepts import MemoryInput
    from noema import Mind
    from noema.config import MindConfig

    items = [MemoryInput.model_validate(d) for d in synthetic_memories(size)]
    queries = synthetic_queries()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        with Mind.open(
            url,
            "bench",
            embedder=EMBEDDER,
            config=MindConfig(embed_inline_max=INLINE_MAX),
            reranker="lexical",
        ) as mind:
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
            _recall_times(mind, queries[:50], vectors[:50], peek=True)  # warm the caches
            peek = _recall_times(mind, queries, vectors, peek=True)
            recall = _recall_times(mind, queries, vectors, peek=False)
            deep = _recall_times(mind, queries, vectors, peek=True, depth="deep")
            stages = stage_times(mind, queries, vectors)
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
        "deep_p50_ms": statistics.median(deep),
        "deep_p95_ms": _percentile(deep, 0.95),
        "stages": {
            stage: (statistics.median(t), _percentile(t, 0.95)) for stage, t in stages.items()
        },
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_model(name: str) -> dict[str, Any] | None:
    """A packaged embedder's load, query embedding time and write rates, when installed.

    Inline: one ``remember`` per memory, each embedded as it is written. Batch: one
    ``remember_many``, which commits first and embeds in the background; both the
    commit and the time until every vector is stored are given.
    """
    from concepts import MemoryInput
    from noema import Mind
    from noema.embeddings import e5_available, minilm_available

    if not {"e5": e5_available, "minilm": minilm_available}[name]():
        return None
    items = [MemoryInput.model_validate(d) for d in synthetic_memories(MODEL_WRITES)]
    queries = synthetic_queries()[:100]
    with tempfile.TemporaryDirectory() as tmp:
        with Mind.open(f"sqlite:///{tmp}/inline.db", "bench", embedder=name) as mind:
            t = time.perf_counter()
            mind.embedder.query("load the model")
            load_seconds = time.perf_counter() - t
            times = []
            for query in queries:
                t = time.perf_counter()
                mind.embedder.query(query)
                times.append((time.perf_counter() - t) * 1000)
            start = time.perf_counter()
            for item in items[:MODEL_INLINE]:
                mind.remember(item.content, kind=item.kind, tags=item.tags)
            inline_seconds = time.perf_counter() - start
        with Mind.open(f"sqlite:///{tmp}/batch.db", "bench", embedder=name) as mind:
            mind.embedder.query("load the model")
            start = time.perf_counter()
            mind.remember_many(items)
            commit_seconds = time.perf_counter() - start
            mind.wait_for_embeddings()
            embedded_seconds = time.perf_counter() - start
    return {
        "model": name,
        "size": MODEL_WRITES,
        "load_s": load_seconds,
        "embed_p50_ms": statistics.median(times),
        "embed_p95_ms": _percentile(times, 0.95),
        "inline_per_s": MODEL_INLINE / inline_seconds,
        "batch_commit_per_s": MODEL_WRITES / commit_seconds,
        "batch_embedded_per_s": MODEL_WRITES / embedded_seconds,
    }


def render(results: list[dict[str, Any]], models: list[dict[str, Any] | None], command: str) -> str:
    tables = [
        "| memories | write with inline embedding | index build | index load | peek p50 "
        "| peek p95 | recall p50 | recall p95 | deep p50 | deep p95 | peak RSS |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        tables.append(
            f"| {r['size']:,} | {r['write_per_s']:,.0f}/s | "
            f"{r['index_build_s']:.1f} s | {r['index_load_s']:.2f} s | "
            f"{r['peek_p50_ms']:.2f} ms | {r['peek_p95_ms']:.2f} ms | "
            f"{r['recall_p50_ms']:.2f} ms | {r['recall_p95_ms']:.2f} ms | "
            f"{r['deep_p50_ms']:.1f} ms | {r['deep_p95_ms']:.1f} ms | "
            f"{r['peak_rss_mb']:.0f} MB |"
        )
    tables += [
        "",
        "Each stage of a fast recall (peek), p50 / p95 in ms; `rank` is everything after"
        " scoring, the neighbour lift (`context`) and the learned ranker (`ranker`) among it:",
        "",
        "| memories | " + " | ".join(STAGES) + " |",
        "|---:|" + "---:|" * len(STAGES),
    ]
    for r in results:
        tables.append(
            f"| {r['size']:,} | "
            + " | ".join(
                f"{r['stages'][stage][0]:.2f} / {r['stages'][stage][1]:.2f}" for stage in STAGES
            )
            + " |"
        )
    tables += [
        "",
        f"Packaged embedders ({MODEL_WRITES:,} memories in one `remember_many`, which commits"
        f" first and embeds in the background; {MODEL_INLINE} written one `remember` at a time):",
        "",
        "| embedder | load | query embedding p50 | p95 | inline writes | batch: committed "
        "| batch: all embedded |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for m in models:
        if m is None:
            continue
        tables.append(
            f"| {m['model']} | {m['load_s']:.2f} s | {m['embed_p50_ms']:.1f} ms "
            f"| {m['embed_p95_ms']:.1f} ms | {m['inline_per_s']:,.0f}/s "
            f"| {m['batch_commit_per_s']:,.0f}/s | {m['batch_embedded_per_s']:,.0f}/s |"
        )
    if any(m is None for m in models):
        tables += ["", "MiniLM: not measured (the embeddings extra is not installed)."]
    targets = []
    for r in results:
        if r["size"] != TARGET_SIZE:
            continue
        targets = [
            f"Targets at {TARGET_SIZE:,} memories:",
            f"- fast recall p95 at most {TARGET_P95_MS:.0f} ms: {r['peek_p95_ms']:.2f} ms (peek), "
            + verdict(r["peek_p95_ms"], TARGET_P95_MS, most=True, unit=" ms", digits=2)
            + f"; {r['recall_p95_ms']:.2f} ms (recall, which reinforces), "
            + verdict(r["recall_p95_ms"], TARGET_P95_MS, most=True, unit=" ms", digits=2),
            f"- deep recall p95 at most {TARGET_DEEP_P95_MS:.0f} ms: {r['deep_p95_ms']:.1f} ms, "
            + verdict(r["deep_p95_ms"], TARGET_DEEP_P95_MS, most=True, unit=" ms", digits=1),
        ]
    return section(
        (BEGIN, END),
        "Semantic recall: latency with vectors, write rates with embedding",
        [
            "Recall (text, keys, vector and graph lanes, query understanding, weighted fusion,",
            "limit 10) over the storage benchmark's memories with 384-d vectors from the hash",
            "embedder, written with inline embedding. Recall times exclude the query embedding",
            "(timed apart below, per embedder). `peek` is read-only; `recall` also reinforces",
            "the results and logs `memory_retrieved` events; `deep` is a peek with the deep",
            "stage (the lexical reranker, named, over the best 100). Each stage of a fast",
            "recall is timed too (`--results`).",
        ],
        command,
        tables,
        targets,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--batch", type=int, default=1_000)
    add_options(parser)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one, args.batch)))
        return 0
    if args.model:
        print(json.dumps(run_model(args.model)))
        return 0
    results = []
    for size in args.sizes:
        result = child_result("benchmarks.semantic", "--one", str(size), "--batch", str(args.batch))
        results.append(result)
        print(
            f"{size:>8,} memories: write {result['write_per_s']:,.0f}/s, peek p50 "
            f"{result['peek_p50_ms']:.2f} ms p95 {result['peek_p95_ms']:.2f} ms",
            file=sys.stderr,
        )
    models = [child_result("benchmarks.semantic", "--model", name) for name in ("e5", "minilm")]
    command = "python -m benchmarks.semantic " + " ".join(
        ["--sizes", *map(str, args.sizes), "--batch", str(args.batch)]
    )
    publish(render(results, models, command), args.output, BEGIN, END)
    save(args.results, "semantic", command, [*results, *(m for m in models if m is not None)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
